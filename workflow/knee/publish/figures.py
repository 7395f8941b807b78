"""Figures from derived files only (never a server): byte-stable PNG and SVG. What each figure
shows is its instrument's (knee.instruments.spec.Figure); this module gives it an Axes and the
derived files, titles it and saves it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from knee import instruments
from knee.analyze.recommend import speculation
from knee.analyze.stats import mean
from knee.core.records import Plan, Section
from knee.publish import rulefig
from knee.publish.numbers import effect_label

# the rc settings that make an SVG byte-identical from run to run (Any: matplotlib types its
# keys as literals)
STABLE: Any = {"svg.hashsalt": "knee", "svg.fonttype": "none", "font.size": 9}
COLORS = {"control": "#888888", "candidate": "#22aa77"}


@dataclass(frozen=True)
class View:
    """What a figure's draw function (knee.instruments.spec.Figure) may read: the derived
    files, the arms' colours, and the analysis it needs, handed in so that the instruments do
    not import it."""
    plan: Plan
    comparison: Mapping[str, Any]
    table: Sequence[Mapping[str, Any]]  # the acceptance table's windows
    colors: Section = field(default_factory=lambda: dict(COLORS))

    @property
    def threshold(self) -> float:
        threshold: float = self.plan["analysis"]["knee_threshold"]
        return threshold

    def session_k(self, arm: str, points: list[int]) -> list[int]:
        return speculation.session_k(self.plan, arm, points)

    effect_label = staticmethod(effect_label)
    mean = staticmethod(mean)


def names(plan: Plan) -> list[str]:
    """Every figure's name: the bar's (knee.publish.rulefig) and those of the plan's
    instruments."""
    return [rulefig.NAME, *(f.name for f in instruments.figures(plan))]


def render_all(plan: Plan, comparison: Mapping[str, Any], table: Sequence[Mapping[str, Any]],
               out_dir: Path, bar: Mapping[str, Any]) -> list[Path]:
    """The bar's figure and every figure of the plan's instruments
    (knee.instruments.spec.Figure): an instrument that did not run draws no figure."""
    view = View(plan, comparison, table)
    with plt.rc_context(STABLE):
        fig, ax = plt.subplots(figsize=(8, 1.6 + 0.7 * len(bar.get("rules") or [1])), dpi=100)
        rulefig.draw(ax, plan, comparison, bar)
        ax.set_title(f"{plan['name']}: {rulefig.TITLE}", pad=24)
        save(fig, out_dir / rulefig.NAME)
        for figure in instruments.figures(plan):
            fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
            figure.draw(ax, view)
            ax.set_title(f"{plan['name']}: {figure.title}")
            save(fig, out_dir / figure.name)
    return [out_dir / f"{name}.{ext}" for name in names(plan) for ext in ("png", "svg")]


def save(fig: Figure, stem: Path) -> None:
    """PNG and SVG, without timestamps, each written to a temp name and renamed."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    for ext, meta in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
        tmp = stem.with_name(f".{stem.name}.tmp.{ext}")
        fig.savefig(tmp, metadata=meta)
        os.replace(tmp, stem.with_name(f"{stem.name}.{ext}"))
    plt.close(fig)
