"""The bar's figure (figures/rules.png): a row per rule with each pair's effect as a point, the
interval that decided at the bar's level with its estimate, the threshold (a gain rule) or the
margin (a parity rule), and the verdict: the picture a reviewer asks for first. The effects are
the ones the verdict used (adjusted where the adjustment applied). From the plan, the
comparison and bar.json only."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from knee.analyze.adjust import covariate
from knee.core import layout, rulekinds
from knee.core.records import BarRule, Plan

NAME = layout.RULES_FIGURE
TITLE = "each rule's pairs, the interval that decided and its threshold"
ALT = ("each bar rule: the pairs' effects as points, the interval that decided with its "
       "estimate, the threshold or margin shaded, and the verdict")
VERDICT_COLORS = {"PASS": "#22aa77", "FAIL": "#cc3344", "INCONCLUSIVE": "#cc8800"}
MARGIN_COLOR, POINT_COLOR, GAIN_COLOR = "#dde4ee", "#555555", "#3366cc"


def pair_effects(rule: BarRule, judged: Mapping[str, Any],
                 comparison: Mapping[str, Any]) -> list[float]:
    """Each pair's effect (%) as the verdict used it."""
    _, used = covariate.used_effects(rule, judged, comparison)
    return [100 * math.expm1(x) for x in used]


def draw(ax: Axes, plan: Plan, comparison: Mapping[str, Any], bar: Mapping[str, Any]) -> None:
    judged = [r for r in bar.get("rules") or [] if r.get("estimate") is not None]
    if not judged:
        ax.text(0.5, 0.5, "no rule was judged", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return
    planned = {r["name"]: r for r in plan["bar"]["rules"]}
    level = f"{100 * judged[0]['confidence']:g}%"
    for row, r in enumerate(judged):
        y = len(judged) - 1 - row
        rule_row(ax, y, planned[r["rule"]], r, pair_effects(planned[r["rule"]], r, comparison))
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_yticks(range(len(judged)), [r["rule"] for r in reversed(judged)])
    ax.set_ylim(-0.6, len(judged) - 0.4)
    ax.set_xlabel(f"candidate against control (%): each pair, and the {level} interval over "
                  "pairs that decided")
    kinds = {rulekinds.kind(planned[r["rule"]]) for r in judged}
    ax.legend(handles=legend(parity=rulekinds.PARITY in kinds, gain=rulekinds.GAIN in kinds),
              loc="lower left",
              fontsize=7, frameon=False, bbox_to_anchor=(0, 1.0), ncol=4)


def rule_row(ax: Axes, y: float, rule: BarRule, judged: Mapping[str, Any],
             effects: list[float]) -> None:
    kind = rulekinds.kind(rule)
    if kind is rulekinds.PARITY:
        w = kind.value(rule)  # the margin as configured, shaded on both sides
        ax.fill_betweenx([y - 0.4, y + 0.4], -w, w, color=MARGIN_COLOR, zorder=0)
    else:
        ax.vlines(kind.value(rule), y - 0.4, y + 0.4, colors=GAIN_COLOR,
                  linestyles="dashed", zorder=1)
    n = len(effects)
    ys = [y + 0.25 * (2 * i / (n - 1) - 1) if n > 1 else y for i in range(n)]
    ax.scatter(effects, ys, s=14, color=POINT_COLOR, zorder=3)
    color = VERDICT_COLORS.get(judged["verdict"], "#333333")
    if judged.get("interval"):  # one pair has none
        lo, hi = judged["interval"]
        ax.hlines(y, lo, hi, colors=color, linewidth=3, zorder=2)
    ax.plot([judged["estimate"]], [y], marker="D", color=color, markersize=6, zorder=4)
    ax.annotate(judged["verdict"], xy=(1.0, y), xycoords=("axes fraction", "data"),
                xytext=(4, 0), textcoords="offset points", va="center", fontsize=8,
                color=color, fontweight="bold", annotation_clip=False)


def legend(parity: bool, gain: bool) -> list[Any]:
    """The legend's entries, a margin and a threshold only where a rule has one."""
    return [Line2D([], [], marker="o", linestyle="", color=POINT_COLOR, label="a pair"),
            Line2D([], [], marker="D", color="#333333", linewidth=3,
                   label="estimate and interval"),
            *([Patch(color=MARGIN_COLOR, label="parity margin")] if parity else []),
            *([Line2D([], [], color=GAIN_COLOR, linestyle="dashed", label="gain threshold")]
              if gain else [])]
