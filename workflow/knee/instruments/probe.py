"""Acceptance probe: single stream at each configured temperature, with the per-position
acceptance of exactly that window (the scrapes bracketing it are kept in the raw file)."""

from __future__ import annotations

from typing import Any

from knee.core import prompts
from knee.core.records import InstrumentRun
from knee.instruments.ports import Target
from knee.instruments.spec import Spec

SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "temperatures": {"type": "array", "minItems": 1, "uniqueItems": True,
                         "items": {"type": "number", "minimum": 0, "maximum": 2},
                         "default": [0.0, 0.8]},
        "requests": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 4},
        "prompt_tokens": {"type": "integer", "minimum": 16, "maximum": 131072, "default": 96},
        "output_tokens": {"$ref": "#/$defs/tokens", "default": 128},
    },
}


def run(target: Target, cfg: dict[str, Any]) -> InstrumentRun:
    out: InstrumentRun = {"instrument": "probe", "points": [], "warmup": None}
    tokenize = target.tokenizer()
    for t in cfg["temperatures"]:
        sampling = {**target.sampling_params(cfg["output_tokens"]), "temperature": t,
                    "seed": target.seed}
        ps = prompts.exact_token_prompts(tokenize, target.seed, f"probe T={t}",
                                         cfg["requests"], cfg["prompt_tokens"])
        before = target.scrape()
        result = target.send(ps, sampling)
        after = target.scrape()
        target.check_alive(f"probe at temperature {t}")
        out["points"].append(target.record(
            result, point=f"T={t}", extra={"prom_before": before, "prom_after": after},
            instrument="probe", prompt_set=ps, sampling=sampling,
            prompt_spec=f"{cfg['prompt_tokens']} tokens of random words, unique head"))
    return out


SPEC = Spec(name="probe", title="Acceptance probe (single stream per temperature)", run=run,
            schema=SCHEMA, point_scrapes=True, acceptance=True, random_prompts=True,
            temperatures=lambda cfg: list(cfg["temperatures"]))
