"""Noise, measured not assumed: run-to-run spread, control drift across boots, and the words
printed beside a delta. Intervals are computed by knee.analyze.inference.

Pure functions over raw instrument payloads (as read from raw/P-ARM/<instrument>.json).
"""

from __future__ import annotations

from knee.analyze.inference import REQUESTS
from knee.analyze.stats import fmean, point_summary
from knee.core.records import Point, RawFile, RequestRecord, RowInterval

SPEED_METHOD = ("the engine CPU's speed during a window is the median of samples taken every "
                "0.25 s while it ran: a fixed piece of work (20000 additions) on that CPU, timed "
                "by the CPU time it took, in million additions per second; a rule follows it "
                "when its figure, relative to its arm's mean, correlates with it over the boots")


def spread_pct(values: list[float | None]) -> float | None:
    """(max - min) / mean, in percent; None with fewer than two values."""
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return None
    mean = fmean(vals)
    return 100.0 * (max(vals) - min(vals)) / mean if mean else None


def run_spread(raw: RawFile, metric: str) -> dict[Point, float | None]:
    """Per point: spread of one session's runs of that point."""
    by_point: dict[Point, list[float | None]] = {}
    for p in raw["points"]:
        by_point.setdefault(p["point"], []).append(point_summary(p)[metric])
    return {point: spread_pct(vals) for point, vals in by_point.items()}


def requests_of(raw: RawFile, point: object) -> list[RequestRecord]:
    return [r for p in raw["points"] if point in ("all", p["point"])
            for r in p["records"] if not r["warmup"] and not r.get("error")]


def noise_label(delta: float | None, noise: float | None, interval: RowInterval) -> str:
    """Words for a delta next to its interval, naming what the interval resampled."""
    if delta is None:
        return "no delta"
    ci, level = interval.get("interval"), interval.get("interval_level")
    pct = f"{100 * interval.get('confidence', 0.95):g}%"
    if level == REQUESTS:
        if ci is None:
            return "one boot pair; no interval"
        where = "spans zero" if ci[0] <= 0 <= ci[1] else "excludes zero"
        return f"one boot pair: {pct} interval over its requests {where} (boot noise not in it)"
    if ci is None:
        return "one boot pair: no interval over boots" + (
            f" (noise ±{noise:.1f}% measured)" if noise is not None else "")
    if ci[0] <= 0 <= ci[1]:
        return f"inside noise: {pct} interval over boot pairs spans zero"
    return f"{pct} interval over boot pairs excludes zero"
