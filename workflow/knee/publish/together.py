"""Both arms at once in the README: per pair, each arm's CPUs and GPUs and how the arms' windows
ran together (simultaneous order) or took turns (interleaved order), and the caveats of
turns that broke the design."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from knee.core.records import Plan, Section

CONCURRENT_S = 0.01  # a handoff reads the partner's file: beyond this, the turns overlapped


def pair_sets(plan: Plan, comparison: Mapping[str, Any]) -> list[Section]:
    """Both arms at once, per pair: each arm's CPUs and GPUs, and how closely the two arms'
    windows ran together (simultaneous: the largest skew, the smallest overlap) or how they
    took turns (interleaved: the turns each took, whether all as registered, the most seconds
    both sent at once, the median handoff); [] in any other order."""
    section = comparison.get("simultaneous") or comparison.get("interleaved") or {}
    if section.get("windows") is None:
        return []
    rows = []
    for pair in sorted({s["pair"] for s in plan["protocol"]["sessions"]}):
        mine = [w for w in section["windows"] if w["pair"] == pair]
        if mine:
            rows.append({"pair": pair, **pair_row(mine), "arms": {
                s["arm"]: s for s in plan["protocol"]["sessions"] if s["pair"] == pair}})
    return rows


def pair_row(windows: list[Section]) -> Section:
    if "skew_s" in windows[0]:
        return {"skew_s": max(w["skew_s"] for w in windows),
                "overlap": min(w["overlap"] for w in windows)}
    handoffs = [w["handoff_s"] for w in windows if w["handoff_s"] is not None]
    return {"units": {a: sum(w["units"][a] for w in windows) for a in ("control", "candidate")},
            "as_registered": all(w["as_registered"] for w in windows),
            "concurrent_s": max(w["concurrent_s"] for w in windows),
            "handoff_ms": 1000 * statistics.median(handoffs) if handoffs else None}


def turn_caveats(section: Mapping[str, Any] | None) -> list[str]:
    """Interleaved order: windows whose turns broke the design (not as registered, or both
    arms sending at once for longer than CONCURRENT_S)."""
    if not section:
        return []
    link, out = "([comparison.json](comparison/comparison.json#/interleaved))", []
    if not section["as_registered"]:
        bad = [f"pair {w['pair']} {w['instrument']}" for w in section["windows"]
               if not w["as_registered"]]
        out.append(f"The arms did not take their turns as the plan drew them in {len(bad)} "
                   f"window(s) ({', '.join(bad[:6])}{', …' if len(bad) > 6 else ''}): those "
                   f"pairs' arms were not measured in the registered order {link}.")
    if (section["max_concurrent_s"] or 0) > CONCURRENT_S:
        out.append(f"Both arms sent at once for up to {section['max_concurrent_s']:.3f} s in "
                   f"a window: their turns overlapped, so each arm's figures there include "
                   f"the other's load {link}.")
    return out
