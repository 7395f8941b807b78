"""Figures from derived files only (never a server): byte-stable PNG and SVG."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from knee.analyze import kmodel
from knee.analyze.folder import FIGURES  # noqa: E402
from knee.analyze.stats import mean  # noqa: E402

STABLE = {"svg.hashsalt": "knee", "svg.fonttype": "none", "font.size": 9}
COLORS = {"control": "#888888", "candidate": "#22aa77"}


def per_point_bars(comparison: dict, plan: dict, metric: str, ylabel: str, title: str,
                   out: Path) -> None:
    """A sweep metric per concurrency point, both arms side by side, each pair's value marked,
    the candidate's change annotated, a dashed line where the candidate's k changes."""
    rows = [r for r in comparison["rows"] if r["instrument"] == "sweep"
            and r["metric"] == metric and r["pair"] != "all"]
    df = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    if df.empty:
        ax.text(0.5, 0.5, "no valid comparison: nothing to plot", ha="center")
    else:
        df["point"] = df["point"].astype(int)
        points = sorted(df["point"].unique())
        means = df.groupby("point")[["control", "candidate"]].mean().loc[points]
        w = 0.38
        for off, arm in ((-w / 2, "control"), (w / 2, "candidate")):
            ax.bar([i + off for i in range(len(points))], means[arm], w, label=arm,
                   color=COLORS[arm])
            for _, r in df.iterrows():
                ax.plot(points.index(r["point"]) + off, r[arm], "k.", ms=4)
        effects = {int(r["point"]): r for r in comparison["rows"] if r["pair"] == "all"
                   and r["instrument"] == "sweep" and r["metric"] == metric}
        for i, p in enumerate(points):
            top = max(means.loc[p, "control"], means.loc[p, "candidate"])
            ax.annotate(effect_label(effects.get(p)), (i, top), ha="center", va="bottom",
                        fontsize=7)
        ks = kmodel.session_k(plan, "candidate", points)
        for i in range(1, len(points)):
            if ks[i] != ks[i - 1]:
                ax.axvline(i - 0.5, color="k", ls="--", lw=1)
                ax.annotate(f"candidate k={ks[i - 1]} | k={ks[i]}", (i - 0.5, ax.get_ylim()[1]),
                            ha="center", va="top", fontsize=8)
        ax.set_xticks(range(len(points)), [f"C{p}" for p in points])
        ax.legend(loc="upper left")
    ax.set_xlabel("concurrency (closed loop)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    save(fig, out)


def effect_label(row: dict | None) -> str:
    """The effect over boot pairs with its interval: a bar's height never stands alone."""
    if row is None or row["delta_pct"] is None:
        return ""
    if not row["interval"]:
        return f"{row['delta_pct']:+.1f}%\n(1 pair)"
    lo, hi = row["interval"]
    return f"{row['delta_pct']:+.1f}%\n[{lo:+.0f}, {hi:+.0f}]"


def acceptance(table: list[dict], threshold: float, title: str, out: Path) -> None:
    """Per-position acceptance rate of each session's sweep window, the threshold, the knee."""
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    windows = [w for w in table if w["speculation"] == "on" and w["instrument"] == "sweep"]
    for w in windows:
        arm = w["session"].split("-", 1)[1]
        rates = w["per_position_rate"]
        xs = range(1, len(rates) + 1)
        ax.plot(xs, rates, "o-", color=COLORS.get(arm, "k"), alpha=0.8, label=w["session"])
        if w["knee_position"]:
            k = w["knee_position"]
            ax.plot(k, rates[k - 1], "x", color="red", ms=10, mew=2)
    positions = max((len(w["per_position_rate"]) for w in windows), default=0)
    ax.set_xticks(range(1, positions + 1))
    ax.axhline(threshold, color="red", ls=":", lw=1, label=f"knee threshold {threshold}")
    if not windows:
        ax.text(0.5, 0.5, "no speculative window", ha="center", transform=ax.transAxes)
    ax.set_xlabel("draft position")
    ax.set_ylabel("acceptance rate (accepted at position / drafts)")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=7)
    save(fig, out)


def fixture(comparison: dict, title: str, out: Path) -> None:
    """Each fixture class: the range of the control boots, the candidate of every pair."""
    classes = comparison.get("fixture_classes") or []
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for i, c in enumerate(classes):
        lo, hi = c["control_range"]
        ax.plot([i, i], [lo, hi], color=COLORS["control"], lw=8, alpha=0.6,
                label="control range (all boots)" if i == 0 else None)
        ax.plot([i] * len(c["candidate"]), c["candidate"], "o", color=COLORS["candidate"],
                label="candidate (each pair)" if i == 0 else None)
        if c["flag"]:
            ax.annotate("same sign every pair", (i, hi), ha="center", va="bottom", fontsize=7)
    if not classes:
        ax.text(0.5, 0.5, "no fixture comparison", ha="center", transform=ax.transAxes)
    else:
        ax.set_xticks(range(len(classes)), [c["class"] for c in classes])
        ax.legend(loc="best", fontsize=8)
    ax.set_ylabel("single-stream decode rate p50 (tok/s)")
    ax.set_title(title)
    save(fig, out)


def depth(comparison: dict, title: str, out: Path) -> None:
    """Decode rate against prompt depth per arm (mean over pairs), the band of the included
    points, excluded points shown and labelled with their recorded reason."""
    curves = comparison.get("depth_curves") or []
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for arm in ("control", "candidate"):
        mine = [c for c in curves if c["arm"] == arm]
        if not mine:
            continue
        depths = [p["depth"] for p in mine[0]["points"]]
        incl = [(d, mean([c["points"][i]["decode_rate"] for c in mine
                           if c["points"][i]["included"]])) for i, d in enumerate(depths)]
        incl = [(d, v) for d, v in incl if v is not None]
        if incl:
            xs, ys = zip(*incl, strict=True)
            ax.plot(xs, ys, "o-", color=COLORS[arm], label=arm)
            band = max(c["band_pct"] or 0 for c in mine)
            ax.fill_between(xs, [ys[0] * (1 - band / 100)] * len(xs),
                            [ys[0] * (1 + band / 100)] * len(xs), color=COLORS[arm], alpha=0.12,
                            label=f"{arm} ±{band:.1f}% band")
        for c in mine:
            for p in c["points"]:
                if not p["included"] and p["decode_rate"]:
                    ax.plot(p["depth"], p["decode_rate"], "x", color=COLORS[arm], ms=9)
                    ax.annotate(f"excluded (pair {c['pair']}): {p['reason'][:40]}",
                                (p["depth"], p["decode_rate"]), fontsize=6, va="bottom")
    if not curves:
        ax.text(0.5, 0.5, "no depth instrument in this experiment", ha="center",
                transform=ax.transAxes)
    else:
        ax.set_xscale("log")
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel("prompt depth (tokens, prefilled)")
    ax.set_ylabel("single-stream decode rate (tok/s)")
    ax.set_title(title)
    save(fig, out)



def render_all(plan: dict, comparison: dict, table: list[dict], out_dir: Path) -> list[Path]:
    """Every figure an instrument declares (knee.instruments.spec), drawn whether or not the
    experiment configures the instrument, so the workflow's outputs never depend on it."""
    name = plan["name"]
    threshold = plan["analysis"]["knee_threshold"]
    draw = {
        "throughput": lambda out: per_point_bars(
            comparison, plan, "throughput", "output throughput (tok/s)",
            f"{name}: output throughput per concurrency", out),
        "ttft": lambda out: per_point_bars(
            comparison, plan, "ttft_p50", "TTFT p50 (s)",
            f"{name}: time to first token per concurrency", out),
        "acceptance": lambda out: acceptance(
            table, threshold, f"{name}: per-position acceptance (sweep windows)", out),
        "fixture": lambda out: fixture(
            comparison, f"{name}: fixture classes against the control range", out),
        "depth": lambda out: depth(comparison, f"{name}: decode rate against prompt depth", out),
    }
    with plt.rc_context(STABLE):
        for figure in FIGURES:
            draw[figure](out_dir / figure)
    return [out_dir / f"{n}.{ext}" for n in FIGURES for ext in ("png", "svg")]


def save(fig, stem: Path) -> None:
    """PNG and SVG, without timestamps, each written to a temp name and renamed."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    for ext, meta in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
        tmp = stem.with_name(f".{stem.name}.tmp.{ext}")
        fig.savefig(tmp, metadata=meta)
        os.replace(tmp, stem.with_name(f"{stem.name}.{ext}"))
    plt.close(fig)
