"""Closed-loop concurrency sweep: points x runs, a fresh prompt set at every (point, run)."""

from __future__ import annotations

from knee import client, prompts


def point_prompts(cfg: dict, seed: int, concurrency: int, run: int) -> list[str]:
    n = max(cfg["min_requests"], cfg["requests_per_stream"] * concurrency)
    return prompts.word_prompts(seed, f"sweep c{concurrency} r{run}", n, cfg["prompt_words"])


def run(engine, cfg: dict, seed: int, model: dict, timeout_s: float) -> dict:
    sampling = prompts.sampling_params(cfg["output_tokens"])
    warm = prompts.word_prompts(seed, "sweep warmup", cfg["warmup_requests"], cfg["prompt_words"])
    out = {"instrument": "sweep", "points": [], "warmup": None}
    if warm:
        out["warmup"] = client.run(engine.base_url, model["name"], warm, sampling, 1,
                                   timeout_s, warmup=True)
    for c in cfg["concurrency"]:
        for r in range(1, cfg["runs"] + 1):
            ps = point_prompts(cfg, seed, c, r)
            result = client.run(engine.base_url, model["name"], ps, sampling, c, timeout_s)
            engine.check_alive(f"sweep point c={c} run {r}")
            out["points"].append({
                "point": c, "run": r,
                "profile": prompts.profile(
                    instrument="sweep", point=c, run=r, prompts=ps, sampling=sampling,
                    concurrency=c, warmup=cfg["warmup_requests"], model=model,
                    dataset=prompts.DATASET, seed=seed,
                    prompt_spec=f"{cfg['prompt_words']} random words, unique head"),
                **result,
            })
    return out
