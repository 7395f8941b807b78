"""A results folder in one line: the bar's verdict, and each rule's with the estimate and the
interval that decided it (`knee verdict`); and a recommendation's schedule in words."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knee.core import folderscan, jsonio, layout
from knee.publish.numbers import pctf as pct


def rule_words(r: Mapping[str, Any]) -> str:
    """One rule: its verdict, estimate, the interval at the level that decided it, and its test."""
    lo, hi = r.get("interval") or (None, None)
    level = f"{round(100 * r['confidence'])}% " if r.get("confidence") else ""
    return (f"{r['rule']} {r['verdict']} ({pct(r.get('estimate'))}, {level}interval "
            f"{pct(lo)} … {pct(hi)}; {r['test']})")


def line(root: Path) -> str:
    """The folder's bar in one line (its files held to the audit's checks before reading)."""
    from knee.publish.audit import check_finished  # an unfinished folder says how far it got

    folderscan.checked([root], "knee verdict")
    check_finished(root, jsonio.read(root / layout.PLAN, "plan"))
    bar = jsonio.read(root / layout.BAR, "bar")
    rules = "; ".join(rule_words(r) for r in bar["rules"])
    return f"{root}: {bar['verdict']} over {bar['pairs']} boot pairs: {rules}"


def schedule_words(rec: Mapping[str, Any]) -> str:
    """A recommendation's k per range of concurrent requests, in words."""
    spans = rec.get("schedule") or []
    if not spans:
        return f"k={rec.get('best_fixed_k')} at every measured concurrency"
    return ", ".join(f"k={k} at {lo}–{hi} concurrent requests" if lo != hi else
                     f"k={k} at {lo}" for lo, hi, k in spans)
