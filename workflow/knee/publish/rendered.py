"""Derived files of a results folder rendered again from the recomputed comparison, bar and
acceptance table, and compared with what the folder holds: comparison.md and verdict.html as
text, acceptance.json as data, every figure (SVG as text, PNG as bytes; rendering fixes the
metadata, so a figure renders to the same bytes wherever the pinned workflow environment runs).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from knee.core import jsonio, layout
from knee.core.records import Plan
from knee.publish import figures, templating
from knee.publish.evidence import diff


def texts(root: Path, comparison: Mapping[str, Any], bar: Mapping[str, Any]) -> list[str]:
    problems = []
    for name, text in ((layout.COMPARISON_MD, templating.comparison_markdown(comparison, bar)),
                       (layout.VERDICT_HTML, templating.verdict_html(comparison, bar))):
        path = Path(root) / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif jsonio.read_text(path) != text:
            problems.append(f"{name}: differs from its rendering from the recomputed comparison "
                            "and bar")
    return problems


def same_files(made: Path, kept: Path, shown: str) -> list[str]:
    """Every file rendered into `made` against the file of that name under `kept`."""
    problems = []
    for f in sorted(made.iterdir()):
        if f.name.startswith("."):
            continue
        mine = kept / f.name
        if not mine.is_file():
            problems.append(f"{shown}/{f.name}: missing")
        elif jsonio.read_bytes(mine) != f.read_bytes():
            problems.append(f"{shown}/{f.name}: differs from the figure rendered again from "
                            "the recomputed files")
    return problems


def figures_of(root: Path, plan: Plan, comparison: Mapping[str, Any],
               table: Sequence[Mapping[str, Any]], bar: Mapping[str, Any]) -> list[str]:
    """Every figure rendered again, and no figure the experiment's instruments do not draw."""
    kept = Path(root) / layout.FIGURES
    with tempfile.TemporaryDirectory() as tmp:
        drawn = {p.name for p in figures.render_all(plan, comparison, table, Path(tmp), bar)}
        extra = sorted(p.name for p in kept.glob("*") if p.is_file() and p.name not in drawn
                       and not p.name.startswith("."))
        return same_files(Path(tmp), kept, "figures") + [
            f"{layout.FIGURES}/{name}: not a figure of this experiment's instruments"
            for name in extra]


def recommend_figure(root: Path, recommendation: Mapping[str, Any]) -> list[str]:
    from knee.publish.recommend import report

    with tempfile.TemporaryDirectory() as tmp:
        report.figure(recommendation, Path(tmp) / "recommend")
        return same_files(Path(tmp), Path(root) / "recommend", "recommend")


def check(root: Path, plan: Plan, comparison: Mapping[str, Any], bar: Mapping[str, Any],
          table: Sequence[Mapping[str, Any]]) -> list[str]:
    """comparison.md, verdict.html, acceptance.json and the figures, rendered again."""
    problems = texts(root, comparison, bar)
    stored = jsonio.read(Path(root) / layout.ACCEPTANCE, "acceptance")
    problems += [f"{layout.ACCEPTANCE}#{p}: differs from the recomputation"
                 for p in diff(stored.get("windows"), table, "/windows")]
    return problems + figures_of(root, plan, comparison, table, bar)
