"""Stop by precision, pre-registered: one more pair, or stop (pure).

With `protocol.pairs: {min, max}` the comparison and the bar are recomputed after every pair
from `min` on, and the run stops as soon as every rule is resolved (PASS or FAIL), or at `max`.
Looking at the verdict after every pair and stopping when it is resolved would inflate the
false PASS and FAIL rates; so the bar's alpha is spent across the looks: each of the
max - min + 1 possible looks decides at alpha / looks (Bonferroni), which keeps the chance of
any false verdict over the whole run at alpha or below whatever the stopping point (union
bound). The final verdict uses the same alpha per look. tests/analyze/test_inference.py proves it on
simulations of known truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knee.core.records import Section

RULE = ("stop after a pair once every bar rule is PASS or FAIL (or the comparison is INVALID), "
        "at the latest at max; every look decides at alpha / (max - min + 1)")


def bounds(pairs: int | Section) -> tuple[int, int]:
    """(min, max) pairs of a protocol: a fixed number is both."""
    return (pairs["min"], pairs["max"]) if isinstance(pairs, dict) else (pairs, pairs)


def looks(pairs: int | Section) -> int:
    lo, hi = bounds(pairs)
    return hi - lo + 1


def alpha_per_look(alpha: float, pairs: int | Section) -> float:
    """The alpha every look decides at; `pairs` is the protocol's, or a number of looks."""
    return alpha / (pairs if isinstance(pairs, int) else looks(pairs))


def decision(bar: Mapping[str, Any], n: int, pairs: int | Section) -> Section:
    """After pair n: stop or one more, and why (recorded as a receipt of the protocol)."""
    lo, hi = bounds(pairs)
    open_rules = [r["rule"] for r in bar["rules"] if r["verdict"] == "INCONCLUSIVE"]
    if bar["verdict"] == "INVALID":
        stop, why = True, "the comparison or a rule is INVALID: more pairs cannot help"
    elif not open_rules:
        stop, why = True, "every rule is resolved"
    elif n >= hi:
        stop, why = True, f"the maximum of {hi} pairs is reached"
    elif n < lo:
        stop, why = False, f"the minimum of {lo} pairs is not reached"
    else:
        stop, why = False, "still INCONCLUSIVE: " + ", ".join(open_rules)
    return {"pairs": n, "stop": stop, "reason": why, "verdict": bar["verdict"],
            "rules": {r["rule"]: r["verdict"] for r in bar["rules"]}}
