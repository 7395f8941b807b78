"""Stopping by precision: one look after pair n (the comparison and bar of pairs 1..n, and
whether to stop), and the realized protocol from the looks made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from knee.analyze import bar, compare
from knee.analyze.folder import Named, load_sessions, sessions_upto
from knee.core.records import Plan
from knee.plan import stopping


def decide(plan: Plan, root: Path, n: int, named: Named | None = None) -> dict[str, Any]:
    """One look of a run that stops by precision: the comparison and bar of pairs 1..n."""
    sessions = load_sessions(plan, root, pairs=n, named=named)
    comparison = compare.compare(plan, sessions)
    verdict = bar.judge_plan(plan, comparison, [s["boot"] for s in sessions.values()])
    return {"experiment": plan["name"], **stopping.decision(verdict, n, plan["protocol"]["pairs"])}


def realized(plan: Plan, decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """The realized protocol from the looks made: where the first look said stop, or max."""
    hi = stopping.bounds(plan["protocol"]["pairs"])[1]
    looks = sorted(decisions, key=lambda d: d["pairs"])
    pairs = next((d["pairs"] for d in looks if d["stop"]), hi)
    keep = ("pairs", "stop", "reason", "verdict", "rules")
    return {"experiment": plan["name"], "pairs": pairs, "rule": stopping.RULE,
            "sessions": [s["id"] for s in sessions_upto(plan, pairs)],
            "decisions": [{k: d[k] for k in keep} for d in looks if d["pairs"] <= pairs]}
