"""Acceptance over the boots: per arm and point of the windows that scrape each point (the
fixture's classes), the acceptance rate's and the acceptance length's means over the boots
that drafted there with their Student t intervals, and each position's mean rate. The
acceptance length is 1 + accepted / drafts (1 + the sum of the per-position rates where every
draft proposed every position): the tokens a verification step yields."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from knee import instruments
from knee.analyze import inference, stats
from knee.analyze.window import prom
from knee.core.records import Point, WindowMetrics
from knee.core.records.window import AcceptanceTable, OverBoots, PointMetrics


def mean_interval(values: list[float], confidence: float) -> tuple[float, list[float] | None]:
    """The mean (stats.fmean: the same digits on every Python) and inference.Effect's Student
    t interval around it (None from one value)."""
    m = stats.fmean(values)
    eff = inference.effect(values)
    half = eff.half_width(confidence) if eff else None
    return m, [m - half, m + half] if half is not None else None


def drafted(points: list[PointMetrics],
            key: Literal["acceptance_rate", "mean_acceptance_length"]) -> list[float]:
    """A figure of each point that drafted (its acceptance rate is not None: nor is this)."""
    return [v for t in points if (v := t.get(key)) is not None]


def over_boots(windows: Sequence[WindowMetrics], confidence: float) -> list[OverBoots]:
    """acceptance.json's over_boots: one row per arm and point of the point-scraped windows of
    instruments that are not the probe's temperatures."""
    got: dict[tuple[str, Point], list[PointMetrics]] = {}
    for w in windows:
        if not w.get("temperatures") or instruments.get(w["instrument"]).temperatures:
            continue
        for t in w["temperatures"]:
            if t.get("acceptance_rate") is not None:
                got.setdefault((w["session"].split("-", 1)[1], t["point"]), []).append(t)
    out: list[OverBoots] = []
    for (arm, point), ts in sorted(got.items()):
        rate, interval = mean_interval(drafted(ts, "acceptance_rate"), confidence)
        length, length_interval = mean_interval(drafted(ts, "mean_acceptance_length"),
                                                confidence)
        positions = [stats.mean(p) for p in zip(*(t["per_position_rate"] for t in ts),
                                                strict=True)]
        out.append({"arm": arm, "point": point, "boots": len(ts), "mean": rate,
                    "interval": interval, "length_mean": length,
                    "length_interval": length_interval, "per_position_rate": positions})
    return out


def document(windows: Sequence[WindowMetrics], sources: list[Any],
             confidence: float) -> AcceptanceTable:
    """comparison/acceptance.json: every window's row (prom.acceptance_table) and over_boots;
    the workflow writes it, the audit makes it again."""
    return {"windows": prom.acceptance_table(windows, sources),
            "over_boots": over_boots(windows, confidence)}
