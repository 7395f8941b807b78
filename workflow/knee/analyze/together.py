"""Simultaneous order in the comparison: for every pair and window, whether the two arms'
windows ran in the same seconds (each raw window records, on the host's clock, when its
traffic began and ended), and which set each arm had. What a pair's difference is measured
against: the host's drift is shared only where the windows overlap."""

from __future__ import annotations

from typing import Any

from knee.analyze.folder import Sessions
from knee.core.records import Plan

METHOD = ("Simultaneous order: both arms of a pair boot at once on their own CPU and GPU sets "
          "(swapped between pairs) and meet before every window, which each starts at the "
          "later one's ready time plus a lead. skew_s: how far apart the two windows' traffic "
          "began; overlap: the share of the longer window during which both ran.")


def section(plan: Plan, sessions: Sessions) -> dict[str, Any]:
    """The `simultaneous` section of a simultaneous plan's comparison; {} for any other."""
    planned = {s["id"]: s for s in (plan.get("protocol") or {}).get("sessions", [])}
    if not planned or not all("together" in s for s in planned.values()):
        return {}
    windows = []
    for (pair, arm), sess in sorted(sessions.items()):
        if arm != "control" or (pair, "candidate") not in sessions:
            continue
        other = sessions[(pair, "candidate")]
        for name, raw in sess["raw"].items():
            mine, theirs = raw.get("together"), other["raw"].get(name, {}).get("together")
            if not (mine and theirs):
                continue
            windows.append({"pair": pair, "instrument": name,
                            "sets": {a: planned[f"{pair}-{a}"]["set"] for a in ("control",
                                                                               "candidate")},
                            **span_agreement(mine, theirs)})
    return {"simultaneous": {
        "method": METHOD, "windows": windows,
        "max_skew_s": max((w["skew_s"] for w in windows), default=None),
        "min_overlap": min((w["overlap"] for w in windows), default=None)}}


def span_agreement(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """How far apart two windows began, and the share of the longer one both ran."""
    both = min(a["ended"], b["ended"]) - max(a["began"], b["began"])
    longer = max(a["ended"] - a["began"], b["ended"] - b["began"])
    return {"skew_s": round(abs(a["began"] - b["began"]), 4),
            "overlap": round(max(0.0, both) / longer, 4) if longer > 0 else 1.0}
