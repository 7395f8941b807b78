"""Both arms at once in the comparison. Simultaneous order: for every pair and window, whether
the two arms' windows ran in the same seconds (each raw window records, on the host's clock,
when its traffic began and ended), and which set each arm had. What a pair's difference is
measured against: the host's drift is shared only where the windows overlap. Interleaved
order: for every pair and window, whether the arms took their turns as the plan drew them and
never sent at the same time."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterator
from typing import Any

from knee.analyze.folder import Sessions
from knee.core.records import Plan, PlannedSession
from knee.core.records.together import (
    InterleavedWindow,
    SimultaneousWindow,
    SpanAgreement,
    Together,
    TogetherSection,
    TurnAgreement,
)
from knee.plan import together as ptogether

METHOD = ("Simultaneous order: both arms of a pair boot at once on their own CPU and GPU sets "
          "(swapped between pairs) and meet before every window, which each starts at the "
          "later one's ready time plus a lead. skew_s: how far apart the two windows' traffic "
          "began; overlap: the share of the longer window during which both ran.")


INTERLEAVED_CPUS = {True: "each on its own CPU set (swapped between pairs)",
                    False: "on the same CPUs"}
INTERLEAVED_METHOD = (
    "Interleaved order: both arms' engines of a pair up at once on the same GPUs, {cpus}; in "
    "every window the arms take turns, one request a "
    "turn in a loop of one stream and one closed loop otherwise, in ABBA blocks whose first arm "
    "is drawn from protocol.seed (knee.plan.together.first_arm). units: the turns each arm "
    "took; as_registered: every turn in the order the plan's draws give; concurrent_s: the "
    "seconds during which both arms' turns ran (0 where they took turns); handoff_s: the "
    "median gap from one arm's turn ending to the other's beginning.")


def section(plan: Plan, sessions: Sessions) -> TogetherSection:
    """The `simultaneous` or `interleaved` section of such a plan's comparison; {} for any
    other."""
    planned = {s["id"]: s for s in (plan.get("protocol") or {}).get("sessions", [])}
    if not planned or not all("together" in s for s in planned.values()):
        return {}
    if plan["protocol"]["order"] == ptogether.INTERLEAVED:
        return interleaved(plan, planned, sessions)
    windows: list[SimultaneousWindow] = [
        {"pair": pair, "instrument": name, "sets": sets, **span_agreement(mine, theirs)}
        for pair, name, sets, mine, theirs in paired_windows(planned, sessions)]
    return {"simultaneous": {
        "method": METHOD, "windows": windows,
        "max_skew_s": max((w["skew_s"] for w in windows), default=None),
        "min_overlap": min((w["overlap"] for w in windows), default=None)}}


def span_agreement(a: Together, b: Together) -> SpanAgreement:
    """How far apart two windows began, and the share of the longer one both ran."""
    both = min(a["ended"], b["ended"]) - max(a["began"], b["began"])
    longer = max(a["ended"] - a["began"], b["ended"] - b["began"])
    return {"skew_s": round(abs(a["began"] - b["began"]), 4),
            "overlap": round(max(0.0, both) / longer, 4) if longer > 0 else 1.0}


def paired_windows(planned: dict[str, PlannedSession], sessions: Sessions) -> Iterator[
        tuple[int, str, dict[str, int], Together, Together]]:
    """(pair, window, sets, the control's and the candidate's `together` records) of every
    window both arms of a pair recorded."""
    for (pair, arm), sess in sorted(sessions.items()):
        if arm != "control" or (pair, "candidate") not in sessions:
            continue
        other = sessions[(pair, "candidate")]
        for name, raw in sess["raw"].items():
            partner = other["raw"].get(name)
            mine, theirs = raw.get("together"), partner.get("together") if partner else None
            if mine and theirs:
                sets = {a: planned[f"{pair}-{a}"]["set"] for a in ("control", "candidate")}
                yield pair, name, sets, mine, theirs


def interleaved(plan: Plan, planned: dict[str, PlannedSession],
                sessions: Sessions) -> TogetherSection:
    seed = plan["protocol"]["seed"]
    windows: list[InterleavedWindow] = []
    for pair, name, sets, mine, theirs in paired_windows(planned, sessions):
        turns = {"control": mine.get("turns") or [], "candidate": theirs.get("turns") or []}
        windows.append({"pair": pair, "instrument": name, "sets": sets,
                        **turn_agreement(turns, seed, pair, name)})
    handoffs = [w["handoff_s"] for w in windows if w["handoff_s"] is not None]
    return {"interleaved": {
        "method": INTERLEAVED_METHOD.format(
            cpus=INTERLEAVED_CPUS[bool((plan.get("runtime") or {}).get("arm_cpus"))]),
        "windows": windows,
        "as_registered": all(w["as_registered"] for w in windows),
        "max_concurrent_s": max((w["concurrent_s"] for w in windows), default=None),
        "median_handoff_s": statistics.median(handoffs) if handoffs else None}}


def turn_agreement(turns: dict[str, list[list[Any]]], seed: int, pair: int,
                   window: str) -> TurnAgreement:
    """Whether the arms took the same units in the registered order, for how long both sent
    at once, and the median handoff between them."""
    units = {arm: len(t) for arm, t in turns.items()}
    registered = len(set(units.values())) == 1 and all(
        [t[0] for t in ts] == list(range(len(ts)))
        and all(t[1] == ptogether.position(seed, pair, window, t[0], arm) for t in ts)
        for arm, ts in turns.items())
    concurrent = math.fsum(max(0.0, min(a[3], b[3]) - max(a[2], b[2]))
                     for a in turns["control"] for b in turns["candidate"])
    ordered = sorted((t[2], t[3], arm) for arm, ts in turns.items() for t in ts)
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(ordered) if a[2] != b[2]]
    return {"units": units, "as_registered": registered, "concurrent_s": round(concurrent, 6),
            "handoff_s": round(statistics.median(gaps), 6) if gaps else None}
