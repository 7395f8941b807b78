"""Figures from derived files only (never raw servers): byte-stable PNG and SVG."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

STABLE = {"svg.hashsalt": "knee", "svg.fonttype": "none"}


def throughput(comparison: dict, out_png: Path, out_svg: Path, title: str) -> None:
    """Output throughput per concurrency point, control and candidate side by side."""
    rows = [r for r in comparison["rows"]
            if r["instrument"] == "sweep" and r["metric"] == "throughput"]
    df = pd.DataFrame(rows)
    with plt.rc_context(STABLE):
        fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
        if df.empty:
            ax.text(0.5, 0.5, "no valid comparison: nothing to plot", ha="center")
        else:
            df["point"] = df["point"].astype(int)
            points = sorted(df["point"].unique())
            x = range(len(points))
            mean = df.groupby("point")[["control", "candidate"]].mean().loc[points]
            w = 0.38
            ax.bar([i - w / 2 for i in x], mean["control"], w, label="control", color="#888")
            ax.bar([i + w / 2 for i in x], mean["candidate"], w, label="candidate",
                   color="#2a7")
            for _, r in df.iterrows():
                i = points.index(r["point"])
                ax.plot(i - w / 2, r["control"], "k.", ms=4)
                ax.plot(i + w / 2, r["candidate"], "k.", ms=4)
            for i, p in enumerate(points):
                gain = 100 * (mean.loc[p, "candidate"] / mean.loc[p, "control"] - 1)
                top = max(mean.loc[p, "control"], mean.loc[p, "candidate"])
                ax.annotate(f"{gain:+.1f}%", (i, top), ha="center", va="bottom", fontsize=8)
            ax.set_xticks(list(x), [f"C{p}" for p in points])
        ax.set_xlabel("concurrency (closed loop)")
        ax.set_ylabel("output throughput (tok/s)")
        ax.set_title(title)
        ax.legend(loc="upper left")
        fig.tight_layout()
        out_png.parent.mkdir(parents=True, exist_ok=True)
        _save(fig, Path(out_png), metadata={"Software": None})
        _save(fig, Path(out_svg), metadata={"Date": None, "Creator": None})
        plt.close(fig)


def _save(fig, path: Path, **kw) -> None:
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, **kw)
    os.replace(tmp, path)
