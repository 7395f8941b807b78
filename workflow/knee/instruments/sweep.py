"""Closed-loop concurrency sweep: points x runs, a fresh prompt set at every (point, run).

Every prompt is exactly `prompt_tokens` tokens of the served model's own tokenizer.
"""

from __future__ import annotations

from knee import client, prompts
from knee.runtime import endpoint


def point_prompts(cfg: dict, tokenize, seed: int, concurrency: int, run: int) -> list[str]:
    n = max(cfg["min_requests"], cfg["requests_per_stream"] * concurrency)
    return prompts.exact_token_prompts(tokenize, seed, f"sweep c{concurrency} r{run}", n,
                                       cfg["prompt_tokens"])


def run(engine, cfg: dict, seed: int, model: dict, timeout_s: float) -> dict:
    api = cfg["api"]
    sampling = prompts.sampling_params(cfg["output_tokens"])
    tokenize = endpoint.tokenizer(engine.base_url, model["name"], engine.check_alive)
    warm = prompts.exact_token_prompts(tokenize, seed, "sweep warmup", cfg["warmup_requests"],
                                       cfg["prompt_tokens"])
    out = {"instrument": "sweep", "points": [], "warmup": None}
    if warm:
        out["warmup"] = client.run(engine.base_url, model["name"], warm, sampling, 1,
                                   timeout_s, warmup=True, api=api)
    for c in cfg["concurrency"]:
        for r in range(1, cfg["runs"] + 1):
            ps = point_prompts(cfg, tokenize, seed, c, r)
            result = client.run(engine.base_url, model["name"], ps, sampling, c, timeout_s,
                                api=api)
            engine.check_alive(f"sweep point c={c} run {r}")
            out["points"].append(prompts.point_record(
                result, point=c, run=r, instrument="sweep", prompts=ps, sampling=sampling,
                concurrency=c, warmup=cfg["warmup_requests"], model=model, seed=seed, api=api,
                prompt_spec=f"{cfg['prompt_tokens']} tokens of random words, unique head"))
    return out
