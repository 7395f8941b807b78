"""The campaign README: one page over the experiments of one invocation (pure: reads each
experiment's plan, comparison, bar and recommendation; writes one Markdown file).

For every sweep concurrency it says which arm's k won each experiment, decided on the
across-pairs interval (the boot pair is the unit): the candidate when the interval lies above
zero, the control when below, "cannot tell" when it spans zero.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knee import instruments
from knee.analyze.recommend.speculation import session_k
from knee.core import folderscan, jsonio, layout
from knee.core.records import Plan, Section
from knee.publish.templating import markdown


def arm_label(plan: Plan, arm: str, c: int | None = None) -> str:
    """off, k=N, or the schedule's k at c."""
    spec = plan["arms"][arm].get("speculative_config") or {}
    if not spec:
        return "off"
    if spec.get("num_speculative_tokens_per_batch_size") and c is None:
        return f"schedule {spec['num_speculative_tokens_per_batch_size']}"
    k = session_k(plan, arm, [c or 1])[0]
    return "off" if k == 0 else f"k={k}"


def winner(plan: Plan, row: Section | None, c: int | None) -> Section | None:
    """Which arm's k won at c (`who`: its label, or None when the interval spans zero), with
    the row over pairs; None where the point has no interval."""
    if row is None or row.get("interval") is None:
        return None
    lo, hi = row["interval"]
    who = "candidate" if lo > 0 else "control" if hi < 0 else None
    return {"who": who and arm_label(plan, who, c), "row": row}


def across(comparison: Mapping[str, Any], instrument: str, metric: str,
           point: object) -> Section | None:
    return next((r for r in comparison["rows"] if r["instrument"] == instrument
                 and r["metric"] == metric and r["point"] == point and r["pair"] == "all"),
                None)


def load(root: Path) -> Section:
    rec = root / layout.RECOMMENDATION
    return {"root": root, "plan": jsonio.read(root / layout.PLAN, "plan"),
            "comparison": jsonio.read(root / layout.COMPARISON, "comparison"),
            "bar": jsonio.read(root / layout.BAR, "bar"),
            "recommend": jsonio.read(rec, "recommendation") if rec.is_file() else None}


def winners(exps: list[Section]) -> list[Section]:
    """The table's rows: the single-stream decode, then throughput at every concurrency any
    experiment swept; a cell per experiment."""
    load, single = instruments.role(instruments.LOAD), instruments.role(instruments.SINGLE_STREAM)
    points = sorted({c for e in exps if load in e["plan"]["instruments"]
                     for c in e["plan"]["instruments"][load]["concurrency"]})
    rows = [{"what": f"single-stream decode ({single})",
             "cells": [winner(e["plan"], across(e["comparison"], single, "decode_rate_p50",
                                                "all"), 1) for e in exps]}]
    return rows + [{"what": f"throughput at c={c}",
                    "cells": [winner(e["plan"], across(e["comparison"], load, "throughput", c),
                                     c) for e in exps]} for c in points]


def won(e: Section) -> dict[str, list[str]]:
    """Per experiment: where each arm's k won and where the run cannot tell."""
    plan, load = e["plan"], instruments.role(instruments.LOAD)
    out: dict[str, list[str]] = {}
    for c in plan["instruments"].get(load, {}).get("concurrency", []):
        w = winner(plan, across(e["comparison"], load, "throughput", c), c)
        if w is not None:
            out.setdefault(f"{w['who']} won" if w["who"] else "cannot tell", []).append(f"c={c}")
    return out


def render(roots: list[Path], out: Path) -> str:
    """The campaign README (templates/campaign.md.j2), its links relative to `out`."""
    exps = [load(r) for r in folderscan.checked(roots, "knee campaign")]
    for e in exps:
        plan = e["plan"]
        e.update(name=plan["name"], link=os.path.relpath(e["root"], Path(out).parent),
                 control=arm_label(plan, "control"), candidate=arm_label(plan, "candidate"),
                 won=won(e))
    return markdown("campaign.md.j2", exps=exps, winners=winners(exps),
                    load=instruments.role(instruments.LOAD))


def write(roots: list[Path], out: Path) -> None:
    jsonio.atomic_write_text(Path(out), render(roots, out))
