"""Single-stream category fixture: prompt classes, n requests each: a class's prompt files
(prompt_dir/<class>/*.txt, cycled) or a selection from a dataset of the package index
(datasets: <class>: ..., distinct prompts)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knee.core import datasets, prompts
from knee.core.errors import KneeError
from knee.core.records import InstrumentRun
from knee.instruments.ports import Axes, Target, View, Windows, Words
from knee.instruments.spec import SINGLE_STREAM, Derived, Figure, Selection, Spec

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["classes"],
    "properties": {
        "prompt_dir": {"type": "string", "minLength": 1, "maxLength": 1024,
                       "default": "config/prompts"},
        "classes": {"type": "array", "minItems": 1, "uniqueItems": True,
                    "items": {"type": "string", "pattern": "^[A-Za-z0-9_-]+\\Z",
                              "maxLength": 64}},
        "datasets": {
            "description": "classes whose prompts come from a dataset (the others from "
                           "prompt_dir): each sends its first `requests` prompts, distinct",
            "type": "object", "additionalProperties": {"$ref": "#/$defs/dataset"}},
        "requests": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 2},
        "output_tokens": {"$ref": "#/$defs/tokens", "default": 64},
    },
}


def check(cfg: dict[str, Any], arms: Mapping[str, Any], source: str) -> None:
    """Every class that selects from a dataset is one of the fixture's classes."""
    for name in cfg.get("datasets") or {}:
        if name not in cfg["classes"]:
            raise KneeError(f"{source}: instruments.fixture.datasets.{name}: {name!r} is not "
                            f"one of instruments.fixture.classes {cfg['classes']}")


def selections(cfg: dict[str, Any]) -> list[Selection]:
    """Each class's dataset selection, the fixture's requests a class sent from it."""
    return [(f"instruments.fixture.datasets.{name}", selection, cfg["requests"])
            for name, selection in (cfg.get("datasets") or {}).items()]


def prompt_files(cfg: dict[str, Any]) -> list[Path]:
    """The prompt files of every class that selects from no dataset, in class order."""
    return [p for name in cfg["classes"] if name not in (cfg.get("datasets") or {})
            for p in prompts.class_files(cfg["prompt_dir"], name)]


def run(target: Target, cfg: dict[str, Any]) -> InstrumentRun:
    sampling = target.sampling_params(cfg["output_tokens"])
    out: InstrumentRun = {"instrument": "fixture", "points": [], "warmup": None}
    for name in cfg["classes"]:
        ps, dataset, spec = class_requests(cfg, name)
        before = target.scrape()
        result = target.send(ps, sampling)
        after = target.scrape()
        target.check_alive(f"fixture class {name}")
        out["points"].append(target.record(
            result, point=name, extra={"prom_before": before, "prom_after": after},
            instrument="fixture", prompt_set=ps, sampling=sampling, dataset=dataset,
            prompt_spec=spec))
    return out


def class_requests(cfg: dict[str, Any], name: str) -> tuple[list[str], str, str]:
    """A class's prompts, the dataset its windows name and how they were chosen."""
    selection = (cfg.get("datasets") or {}).get(name)
    if selection:
        ps = datasets.take(selection, cfg["requests"],
                           where=f"instruments.fixture.datasets.{name}")
        return (ps, datasets.label(selection),
                datasets.describe(selection, 0, cfg["requests"]))
    texts = prompts.class_prompts(cfg["prompt_dir"], name)
    return ([texts[i % len(texts)] for i in range(cfg["requests"])], f"fixture:{name}",
            f"{cfg['prompt_dir']}/{name}/*.txt, cycled")


def classes(windows: Windows) -> list[dict[str, Any]]:
    """Each class's candidate figure against the range of every control boot (the flag of the
    reference write-up)."""
    figs = [(windows.figures(c), windows.figures(d)) for c, d in windows.pairs]
    out = []
    for cls in [c for c in figs[0][0] if c != "all"]:
        controls = [fa[cls]["decode_rate_p50"] for fa, _ in figs]
        cands = [fb[cls]["decode_rate_p50"] for _, fb in figs]
        deltas = [windows.delta_pct(a, b) for a, b in zip(controls, cands, strict=True)]
        signs = {(d > 0) - (d < 0) for d in deltas if d is not None}
        consistent = len(signs) == 1 and 0 not in signs and len(deltas) > 1
        lo, hi = min(controls), max(controls)
        inside = all(lo <= c <= hi for c in cands)
        out.append({"class": cls, "metric": "decode_rate_p50", "control_range": [lo, hi],
                    "candidate": cands, "delta_pct": deltas, "inside_control_range": inside,
                    "consistent_sign": consistent, "flag": consistent})
    return out


def caveats(classes: list[dict[str, Any]], comparison: Mapping[str, Any],
            words: Words) -> list[str]:
    """A class whose candidate delta has one sign in every pair, with its interval over pairs."""
    out = []
    for c in classes:
        if c["flag"]:
            where = "inside" if c["inside_control_range"] else "outside"
            row = next((r for r in comparison["rows"] if r["pair"] == "all" and r["instrument"]
                        == "fixture" and r["point"] == c["class"]
                        and r["metric"] == c["metric"]), None)
            over = (f"; interval ({words.level(row)}) {words.interval(row['interval'])}"
                    if row and row["interval"] else "")
            out.append(f"Fixture class {c['class']}: the candidate's delta has the same sign in "
                       f"every pair ({', '.join(words.pct(d) for d in c['delta_pct'])}), {where} "
                       f"the range of the control boots ({words.fmt(c['control_range'][0])}–"
                       f"{words.fmt(c['control_range'][1])}){over}.")
    return out


def draw(ax: Axes, view: View) -> None:
    """Each fixture class: the range of the control boots, the candidate of every pair."""
    classes = view.comparison.get("fixture_classes") or []
    for i, c in enumerate(classes):
        lo, hi = c["control_range"]
        ax.plot([i, i], [lo, hi], color=view.colors["control"], lw=8, alpha=0.6,
                label="control range (all boots)" if i == 0 else None)
        ax.plot([i] * len(c["candidate"]), c["candidate"], "o", color=view.colors["candidate"],
                label="candidate (each pair)" if i == 0 else None)
        if c["flag"]:
            ax.annotate("same sign every pair", (i, hi), ha="center", va="bottom", fontsize=7)
    if not classes:
        ax.text(0.5, 0.5, "no fixture comparison", ha="center", transform=ax.transAxes)
    else:
        ax.set_xticks(range(len(classes)), [c["class"] for c in classes])
        ax.legend(loc="best", fontsize=8)
    ax.set_ylabel("single-stream decode rate p50 (tok/s)")


SPEC = Spec(name="fixture", title="Single-stream fixture", run=run, schema=SCHEMA,
            bar_points=lambda cfg: cfg["classes"], pools=True, role=SINGLE_STREAM,
            point_scrapes=True,
            summary=lambda cfg: f"fixture: {cfg['classes']} x {cfg['requests']}",
            check=check, datasets=selections, prompt_files=prompt_files,
            derived=(Derived("fixture_classes", classes, caveats),),
            figures=(Figure("fixture", "fixture classes against the control range",
                            "fixture classes against the control range", draw),))
