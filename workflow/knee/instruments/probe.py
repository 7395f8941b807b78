"""Acceptance probe: single stream at each configured temperature, with the per-position
acceptance of exactly that window (the scrapes bracketing it are kept in the raw file)."""

from __future__ import annotations

from knee import client, prompts
from knee.runtime import endpoint


def run(engine, cfg: dict, seed: int, model: dict, timeout_s: float) -> dict:
    out = {"instrument": "probe", "points": [], "warmup": None}
    tokenize = endpoint.tokenizer(engine.base_url, model["name"], engine.check_alive)
    for t in cfg["temperatures"]:
        sampling = {**prompts.sampling_params(cfg["output_tokens"]), "temperature": t,
                    "seed": seed}
        ps = prompts.exact_token_prompts(tokenize, seed, f"probe T={t}", cfg["requests"],
                                         cfg["prompt_tokens"])
        before = endpoint.scrape(engine.base_url)
        result = client.run(engine.base_url, model["name"], ps, sampling, 1, timeout_s,
                            api=cfg["api"])
        after = endpoint.scrape(engine.base_url)
        engine.check_alive(f"probe at temperature {t}")
        out["points"].append(prompts.point_record(
            result, point=f"T={t}", extra={"prom_before": before, "prom_after": after},
            instrument="probe", prompts=ps, sampling=sampling, model=model, seed=seed,
            api=cfg["api"],
            prompt_spec=f"{cfg['prompt_tokens']} tokens of random words, unique head"))
    return out
