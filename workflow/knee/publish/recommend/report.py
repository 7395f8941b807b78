"""recommend/README.md and recommend/recommend.png (+ .svg) from recommendation.json."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from knee import instruments
from knee.core import layout
from knee.core.records import Plan, Section
from knee.publish.figures import COLORS, STABLE, save
from knee.publish.readme import workload_caveats
from knee.publish.templating import markdown


def best_rows(rec: Mapping[str, Any]) -> list[Section]:
    """Each concurrency's best k with the prediction it names (`at`: its index in
    predictions) and the best fixed k's predicted throughput there."""
    preds = {(p["concurrency"], p["k"]): (i, p) for i, p in enumerate(rec["predictions"])}
    fixed = rec["best_fixed_k"]
    out = []
    for b in rec["best"]:
        at, p = preds[(b["concurrency"], b["best_k"])]
        out.append({**b, "at": at, "predicted": p,
                    "fixed_throughput": preds[(b["concurrency"], fixed)][1]["throughput"]})
    return out


def readme(rec: Mapping[str, Any], plan: Plan) -> str:
    """recommend/README.md (templates/recommend.md.j2): the recommendation, or why none."""
    if rec["status"] != "recommended":
        return markdown("recommend.md.j2", rec=rec)
    windows = [Path(w).name for w in rec["acceptance"]["windows"]]
    read = [n for n in instruments.names() if any(w.startswith(f"{n}.") for w in windows)]
    return markdown("recommend.md.j2", rec=rec, best=best_rows(rec), verify=layout.VERIFY,
                    caveats=workload_caveats(plan, read))


def figure(rec: Mapping[str, Any], stem: Path) -> None:
    """Predicted throughput per k against concurrency (band: interval), each arm's measured
    points, the crossover and each arm's knee."""
    with plt.rc_context(STABLE):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        if rec["status"] != "recommended":
            ax.text(0.5, 0.5, f"no recommendation:\n{rec['reason']}", ha="center",
                    va="center", wrap=True, transform=ax.transAxes)
            ax.set_axis_off()
            save(fig, stem)
            return
        conc = rec["concurrency"]
        cmap = plt.get_cmap("viridis", len(rec["ks"]) + 1)
        for j, k in enumerate(rec["ks"]):
            ps = [p for p in rec["predictions"] if p["k"] == k]
            ax.plot(conc, [p["throughput"] for p in ps], color=cmap(j), lw=1.2, label=f"k={k}")
            ivs = [p["throughput_interval"] for p in ps]
            if all(ivs):
                ax.fill_between(conc, [i[0] for i in ivs], [i[1] for i in ivs],
                                color=cmap(j), alpha=0.12, lw=0)
        for arm in ("control", "candidate"):
            pts = [m for m in rec["measured"] if m["arm"] == arm]
            ax.scatter([m["concurrency"] for m in pts], [m["measured"] for m in pts],
                       color=COLORS[arm], edgecolor="black", zorder=3, s=28,
                       label=f"{arm} measured")
            throughput_knee = rec["knees"][arm]["knee"]
            if throughput_knee is not None:
                ax.axvline(throughput_knee, color=COLORS[arm], ls=":", lw=1)
                ax.text(throughput_knee, ax.get_ylim()[0], f" {arm} knee", rotation=90, fontsize=7,
                        va="bottom", color=COLORS[arm])
        x = rec["crossover"]["concurrency"]
        if x is not None:
            ax.axvline(x, color="#aa3333", ls="--", lw=1)
            ax.text(x, ax.get_ylim()[1], f" k={rec['crossover']['k']} wins", fontsize=7,
                    va="top", color="#aa3333")
        ax.set_xscale("log", base=2)
        ax.set_xticks(conc, [str(c) for c in conc])
        ax.set_xlabel("concurrency")
        ax.set_ylabel("output throughput (tok/s)")
        ax.set_title(f"{rec['experiment']}: predicted throughput per k, measured points")
        ax.legend(fontsize=7, ncol=2, loc="best")
        save(fig, stem)
