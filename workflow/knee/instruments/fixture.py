"""Single-stream category fixture: prompt classes shipped as data, n requests each."""

from __future__ import annotations

from knee import client, prompts


def run(engine, cfg: dict, seed: int, model: dict, timeout_s: float) -> dict:
    sampling = prompts.sampling_params(cfg["output_tokens"])
    out = {"instrument": "fixture", "points": [], "warmup": None}
    for name in cfg["classes"]:
        texts = prompts.class_prompts(cfg["prompt_dir"], name)
        ps = [texts[i % len(texts)] for i in range(cfg["requests"])]
        result = client.run(engine.base_url, model["name"], ps, sampling, 1, timeout_s,
                            api=cfg["api"])
        engine.check_alive(f"fixture class {name}")
        out["points"].append(prompts.point_record(
            result, point=name, instrument="fixture", prompts=ps, sampling=sampling,
            model=model, dataset=f"fixture:{name}", seed=seed, api=cfg["api"],
            prompt_spec=f"{cfg['prompt_dir']}/{name}/*.txt, cycled"))
    return out
