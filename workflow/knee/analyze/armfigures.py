"""Each arm's figures of a raw file, per point: the mean over runs of each run's figures, the
paired geometric mean over requests, a fixture-wide 'all'; and a change between two figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knee import instruments
from knee.analyze import sampling
from knee.analyze.stats import decode_rate, gmean, mean, pct, point_summary
from knee.core import metrics
from knee.core.records import Point, RawFile

METRICS = metrics.NAMES  # knee.core.metrics declares each

# a point's figures: each metric's value (None where the window gives none), and errors
Figures = dict[str, float | None]


def arm_figures(raw: RawFile,
                withheld: Mapping[float | str, str] | None = None) -> dict[Point, Figures]:
    """Per point: the mean over runs of each run's figures, plus a fixture-wide 'all'; a point
    sampled where an engine of the experiment does not sample as asked has none
    (knee.analyze.sampling.withheld)."""
    by_point: dict[Point, list[dict[str, Any]]] = {}
    points = [p for p in raw["points"] if not sampling.point_reason(withheld or {}, p)]
    raw = {**raw, "points": points}
    for p in raw["points"]:
        by_point.setdefault(p["point"], []).append(point_summary(p))
    out: dict[Point, Figures] = {}
    for point, runs in by_point.items():
        out[point] = {m: mean([r[m] for r in runs]) for m in METRICS}
        out[point]["errors"] = sum(r["errors"] for r in runs)
        # paired over requests: the geometric mean over every run's requests at once
        out[point]["decode_rate_gmean"] = gmean([
            decode_rate(r) for p in raw["points"] if p["point"] == point
            for r in p["records"] if not r["warmup"]])
    if instruments.get(raw["instrument"]).pools:
        recs = [r for p in raw["points"] for r in p["records"] if not r["warmup"]]
        rates = [decode_rate(r) for r in recs]
        out["all"] = {"decode_rate_p50": pct(rates, 50), "decode_rate_gmean": gmean(rates),
                      "throughput": None, "ttft_p50": None, "errors": 0}
    return out


def delta_pct(control: float | None, candidate: float | None) -> float | None:
    if control in (None, 0) or candidate is None:
        return None
    return 100.0 * (candidate - control) / control
