"""Single-stream category fixture: prompt classes shipped as data, n requests each."""

from __future__ import annotations

from knee.core import prompts
from knee.instruments.spec import Spec

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["classes"],
    "properties": {
        "prompt_dir": {"type": "string", "minLength": 1, "maxLength": 1024,
                       "default": "config/prompts"},
        "classes": {"type": "array", "minItems": 1, "uniqueItems": True,
                    "items": {"type": "string", "pattern": "^[A-Za-z0-9_-]+\\Z",
                              "maxLength": 64}},
        "requests": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 2},
        "output_tokens": {"$ref": "#/$defs/tokens", "default": 64},
    },
}


def run(target, cfg: dict) -> dict:
    sampling = target.sampling_params(cfg["output_tokens"])
    out = {"instrument": "fixture", "points": [], "warmup": None}
    for name in cfg["classes"]:
        texts = prompts.class_prompts(cfg["prompt_dir"], name)
        ps = [texts[i % len(texts)] for i in range(cfg["requests"])]
        result = target.send(ps, sampling)
        target.check_alive(f"fixture class {name}")
        out["points"].append(target.record(
            result, point=name, instrument="fixture", prompt_set=ps, sampling=sampling,
            dataset=f"fixture:{name}", prompt_spec=f"{cfg['prompt_dir']}/{name}/*.txt, cycled"))
    return out


SPEC = Spec(name="fixture", title="Single-stream fixture", run=run, schema=SCHEMA,
            bar_points=lambda cfg: cfg["classes"], pools=True, figures=("fixture",))
