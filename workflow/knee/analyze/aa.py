"""A/A experiments assembled from published boots: how often identical servers look different.

Every published session whose server settings equal a reference arm is a boot of the same
config. Taken in the order they booted and paired two by two, they make an A/A experiment (a
true effect of zero) through the same comparison and bar as any other: the share of its
across-pairs intervals that exclude zero is the false-positive rate on this host, and its
between-pair spread gives the smallest effect N pairs resolve. Reads results folders only.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

from knee.analyze import armfigures, bar, compare, inference
from knee.analyze.folder import Sessions, load_sessions
from knee.analyze.inference import FalsePositives
from knee.analyze.noise import spread_pct
from knee.core import folderscan, jsonio, layout
from knee.core.errors import KneeError
from knee.core.records import BarRule, BarVerdict, Comparison, LoadedSession, Plan
from knee.plan.arms import NO_VARIABLE
from knee.plan.config import sha256_of


def boots_of(roots: list[Path], arm: Mapping[str, Any]) -> list[LoadedSession]:
    """Every session of these results folders that ran exactly `arm`, in boot order."""
    found: list[LoadedSession] = []
    for root in folderscan.checked(roots, "an A/A"):
        plan = jsonio.read(Path(root) / layout.PLAN, "plan")
        for session in load_sessions(plan, root).values():
            if session["boot"]["server"] == arm:
                found.append(session)
    return sorted(found, key=lambda s: s["boot"]["started_at"])


def assemble(boots: Sequence[LoadedSession],
             template: Mapping[str, Any]) -> tuple[Plan, Sessions]:
    """Consecutive boots paired (first = control): a plan and sessions for knee.analyze.compare."""
    pairs = len(boots) // 2
    if pairs < 1:
        raise KneeError(f"an A/A experiment needs two boots of one arm, found {len(boots)}")
    sessions = {(p + 1, arm): boots[2 * p + i]
                for p in range(pairs) for i, arm in enumerate(("control", "candidate"))}
    # the fields of a plan that the comparison reads
    plan = cast(Plan, {"name": f"aa-{template['name']}", "variable": NO_VARIABLE,
                       "protocol": {"pairs": pairs}, "instruments": template["instruments"],
                       "analysis": template["analysis"]})
    return plan, sessions


class AA(FalsePositives):
    """An A/A experiment from published boots: the boots, the pairs, the comparison, the bar,
    its false positives and each rule's spread over the boots."""

    boots: list[str]
    pairs: int
    comparison: Comparison
    bar: BarVerdict
    boot_spread_pct: BootSpread


class BootSpread(TypedDict):
    """Each rule's spread of one arm's figure across its boots, and their median."""

    per_rule: dict[str, float | None]
    median: float | None


def calibrate(roots: list[Path], rules: list[BarRule],
              alpha: float = 0.05) -> AA:
    """The A/A comparison of every boot of the first folder's control arm, and its bar."""
    first = jsonio.read(Path(roots[0]) / layout.PLAN, "plan")
    boots = boots_of(roots, first["arms"]["control"])
    plan, sessions = assemble(boots, first)
    pairs = len(boots) // 2
    comparison = compare.compare(plan, sessions)
    bar_def = {"alpha": alpha, "rules": rules}
    verdict = bar.judge(comparison, bar_def, pairs, sha256_of(bar_def), set())
    return AA(boots=[s["boot"]["experiment"] + "/" + s["boot"]["session"] for s in boots],
              pairs=pairs, comparison=comparison, bar=verdict,
              **inference.false_positives(comparison["rows"]),
              boot_spread_pct=boot_spread(boots, rules))


def boot_spread(boots: Sequence[LoadedSession], rules: list[BarRule]) -> BootSpread:
    """Per bar point: the spread (max - min over mean) of one arm's figure across its boots,
    and the median over the points (the noise target of the embedded default)."""
    out: dict[str, float | None] = {}
    for rule in rules:
        figures = [armfigures.arm_figures(b["raw"][rule["instrument"]]).get(rule["point"], {})
                   for b in boots]
        out[rule["name"]] = spread_pct([f.get(rule["metric"]) for f in figures])
    values = [v for v in out.values() if v is not None]
    return {"per_rule": out, "median": statistics.median(values) if values else None}


def mde_by_pairs(rule: BarRule, sd: float | None, alpha: float,
                 pairs: Iterable[int] = range(2, 9)) -> dict[int, float | None]:
    """The MDE of a rule at each number of pairs, from a measured between-pair spread."""
    if sd is None:
        return {}
    return {n: inference.mde_pct(inference.Effect(n, 0.0, sd), alpha) for n in pairs}
