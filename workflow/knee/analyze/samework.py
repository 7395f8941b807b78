"""Whether both arms did the same work: every request records the sha256 of its output token
ids (knee.measure.client), and each request of the candidate is set against the control's same
request in its pair (same instrument, point, run and index). Per point: how many paired
requests generated identical tokens, and where they did not, the first position that differs;
and in each arm, the share of requests that ended at end-of-sequence.

A speculative change is lossless at T=0 only up to the engine's arithmetic: a throughput then
compares the same tokens. Where the arms generated different text, a bar that registers
max_divergent_share makes the verdict CONFOUNDED above it, naming the work that differed.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any, TypedDict

from knee.analyze.folder import Sessions, paired_requests
from knee.core.records import SameWorkRow
from knee.core.records.engine import EngineDifference


class SameWorkSection(TypedDict, total=False):
    """comparison.json's same_work (no key where no request recorded its output's sha256)."""

    same_work: list[SameWorkRow]

# per point, the paired requests whose tokens differed that comparison.json lists by name
LISTED = 20


def eos_share(records: Mapping[Any, Mapping[str, Any]]) -> float:
    """The share of an arm's requests that ended at end-of-sequence (finish_reason stop), not
    at max_tokens."""
    stopped: int = sum(r.get("finish_reason") == "stop" for r in records.values())
    return stopped / len(records)


def first_difference(a: list[int] | None, b: list[int] | None) -> int | None:
    """The 1-based position of the first token that differs (a shorter answer differs where it
    ends); None where the ids were not recorded."""
    if a is None or b is None:
        return None
    for i, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        if x != y:
            return i
    return min(len(a), len(b)) + 1


def section(sessions: Sessions) -> SameWorkSection:
    """comparison.json's same_work: per (instrument, point), the paired requests, how many
    generated identical tokens, and each that did not (up to LISTED) with its first differing
    position. Empty where no request recorded its output's sha256 (older folders, or a server
    that does not return token ids)."""
    rows: list[SameWorkRow] = []
    for inst, point, control, candidate, same in paired_requests(sessions, lambda p, r: (
            not r["warmup"] and not r["error"] and bool(r.get("output_sha256")))):
        apart = [(k, first_difference(control[k].get("output_token_ids"),
                                      candidate[k].get("output_token_ids")))
                 for k in same if control[k]["output_sha256"] != candidate[k]["output_sha256"]]
        firsts = [f for _, f in apart if f is not None]
        rows.append({
            "instrument": inst, "point": point, "paired": len(same),
            "identical": len(same) - len(apart),
            "identical_share": (len(same) - len(apart)) / len(same),
            "first_difference_median": statistics.median(firsts) if firsts else None,
            "ended_at_eos": {"control": eos_share(control), "candidate": eos_share(candidate)},
            "divergent": [{"pair": k[0], "run": k[1], "index": k[2], "first_difference": f}
                          for k, f in apart[:LISTED]]})
    return {"same_work": rows} if rows else {}


def divergences(comparison: Mapping[str, Any],
                max_share: float | Mapping[str, float] | None) -> list[EngineDifference]:
    """Each point whose share of paired requests with different tokens is above the bar's
    max_divergent_share (one for every instrument, or its instrument's), as a confound: the
    arms compared different work."""
    out: list[EngineDifference] = []
    for row in comparison.get("same_work") or []:
        share = 1 - row["identical_share"]
        limit = max_share.get(row["instrument"]) if isinstance(max_share, Mapping) \
            else max_share
        if limit is not None and share > limit:
            where = (f", first difference at token {row['first_difference_median']:g} (median)"
                     if row["first_difference_median"] is not None else "")
            out.append({"kind": "output tokens", "arms": ["control", "candidate"],
                        "what": f"{row['instrument']} point {row['point']}: "
                                f"{row['paired'] - row['identical']} of {row['paired']} paired "
                                f"requests generated different tokens ({100 * share:.1f} %, "
                                f"above the registered max_divergent_share "
                                f"{100 * limit:g} %){where}"})
    return out
