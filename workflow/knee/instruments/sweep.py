"""Closed-loop concurrency sweep: points x runs, a fresh prompt set at every (point, run).

Every prompt is exactly `prompt_tokens` tokens of the served model's own tokenizer.
"""

from __future__ import annotations

from knee.core import prompts
from knee.instruments.spec import Spec

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["concurrency"],
    "properties": {
        "concurrency": {"$ref": "#/$defs/points"},
        "runs": {"type": "integer", "minimum": 1, "maximum": 20, "default": 2},
        "requests_per_stream": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 2},
        "min_requests": {"type": "integer", "minimum": 1, "maximum": 100000, "default": 4},
        "prompt_tokens": {
            "description": "exact length of every prompt in tokens of the served model's "
                           "tokenizer",
            "type": "integer", "minimum": 16, "maximum": 131072, "default": 96},
        "output_tokens": {"$ref": "#/$defs/tokens", "default": 64},
        "warmup_requests": {"type": "integer", "minimum": 0, "maximum": 1000, "default": 2},
    },
}


def point_prompts(cfg: dict, tokenize, seed: int, concurrency: int, run: int) -> list[str]:
    n = max(cfg["min_requests"], cfg["requests_per_stream"] * concurrency)
    return prompts.exact_token_prompts(tokenize, seed, f"sweep c{concurrency} r{run}", n,
                                       cfg["prompt_tokens"])


def run(target, cfg: dict) -> dict:
    sampling = target.sampling_params(cfg["output_tokens"])
    tokenize = target.tokenizer()
    warm = prompts.exact_token_prompts(tokenize, target.seed, "sweep warmup",
                                       cfg["warmup_requests"], cfg["prompt_tokens"])
    out = {"instrument": "sweep", "points": [], "warmup": None}
    if warm:
        out["warmup"] = target.send(warm, sampling, warmup=True)
    for c in cfg["concurrency"]:
        for r in range(1, cfg["runs"] + 1):
            ps = point_prompts(cfg, tokenize, target.seed, c, r)
            result = target.send(ps, sampling, c)
            target.check_alive(f"sweep point c={c} run {r}")
            out["points"].append(target.record(
                result, point=c, run=r, instrument="sweep", prompt_set=ps, sampling=sampling,
                concurrency=c, warmup=cfg["warmup_requests"],
                prompt_spec=f"{cfg['prompt_tokens']} tokens of random words, unique head"))
    return out


SPEC = Spec(name="sweep", title="Concurrency sweep", run=run, schema=SCHEMA,
            bar_points=lambda cfg: cfg["concurrency"],
            figures=("throughput", "ttft", "acceptance"))
