"""The number formats of every report knee publishes (comparison.md, the README, the
campaign page, the recommendation's README and figures): a value, a signed percentage, an
interval and what it resampled, each written one way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def fmt(x: float | None) -> str:
    """Two decimals, or four significant digits for small values (TTFT in seconds)."""
    if x is None:
        return "–"
    return f"{x:.4g}" if abs(x) < 10 else f"{x:.2f}"


def pctf(x: float | None) -> str:
    return "–" if x is None else f"{x:+.2f}%"


def ci(interval: Sequence[float] | None) -> str:
    return "–" if not interval else f"{interval[0]:+.1f}% … {interval[1]:+.1f}%"


def level(r: Mapping[str, Any]) -> str:
    """What an interval resampled, in a few words: over boot pairs or within one pair."""
    where = "over boot pairs" if r["interval_level"] == "boot pairs" else "within the pair"
    return f"{100 * r['confidence']:g}% {where}"


def interval_text(iv: Sequence[float] | None, pct: bool = False) -> str:
    """An interval as `lo … hi`: signed percentages, or whole numbers (tokens/s)."""
    if not iv:
        return "n/a"
    return f"{pctf(iv[0])} … {pctf(iv[1])}" if pct else f"{iv[0]:.0f} … {iv[1]:.0f}"


def effect_label(row: Mapping[str, Any] | None) -> str:
    """The effect over boot pairs with its interval: a bar's height never stands alone."""
    if row is None or row["delta_pct"] is None:
        return ""
    if not row["interval"]:
        return f"{row['delta_pct']:+.1f}%\n(1 pair)"
    lo, hi = row["interval"]
    return f"{row['delta_pct']:+.1f}%\n[{lo:+.1f}, {hi:+.1f}]"
