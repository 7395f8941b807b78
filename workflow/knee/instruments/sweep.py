"""Closed-loop concurrency sweep: points x runs, a fresh prompt set at every (point, run).

Every prompt is exactly `prompt_tokens` tokens of random words in the served model's own
tokenizer, or, where the sweep names a dataset, the dataset's prompts as they are: the warm-up
takes the first of the selection, then each (point, run) the next ones, none sent twice.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from knee.core import datasets, prompts
from knee.core.records import InstrumentRun
from knee.instruments.ports import Axes, Target, Tokenize, View
from knee.instruments.spec import LOAD, Figure, Spec

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["concurrency"],
    "properties": {
        "concurrency": {"$ref": "#/$defs/points"},
        "runs": {"type": "integer", "minimum": 1, "maximum": 20, "default": 2},
        "requests_per_stream": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 2},
        "min_requests": {"type": "integer", "minimum": 1, "maximum": 100000, "default": 4},
        "prompt_tokens": {
            "description": "exact length of every prompt in tokens of the served model's "
                           "tokenizer",
            "type": "integer", "minimum": 16, "maximum": 131072, "default": 96},
        "output_tokens": {"$ref": "#/$defs/tokens", "default": 64},
        "dataset": {
            "description": "send a dataset's prompts instead of random words (prompt_tokens "
                           "then plays no part)",
            "$ref": "#/$defs/dataset"},
        "warmup_requests": {"type": "integer", "minimum": 0, "maximum": 1000, "default": 2},
        "min_window_s": {
            "description": "hold each run's concurrency at least this long: the client keeps "
                           "sending from the run's prompt list, in order, until this many "
                           "seconds have passed (and the run's usual count was sent), then "
                           "lets the requests in flight finish. Both arms get the same list, "
                           "so request i is the same request in every session. 0: send the "
                           "usual count (absent: 0)",
            "type": "number", "minimum": 0, "maximum": 3600},
        "max_requests_per_stream": {
            "description": "with min_window_s: the length of each run's prompt list, per stream "
                           "(a window that sends them all before min_window_s says so; "
                           "absent: 64)",
            "type": "integer", "minimum": 1, "maximum": 10000},
    },
}


def floor(cfg: dict[str, Any], concurrency: int) -> int:
    """The requests a run sends at the least."""
    return int(max(cfg["min_requests"], cfg["requests_per_stream"] * concurrency))


def list_length(cfg: dict[str, Any], concurrency: int) -> int:
    """A run's prompt list: the usual count, or held for min_window_s, the longer list it
    takes its requests from in order."""
    n = floor(cfg, concurrency)
    if cfg.get("min_window_s"):
        n = max(n, cfg.get("max_requests_per_stream", 64) * concurrency)
    return n


def dataset_slices(cfg: dict[str, Any]) -> dict[tuple[int, int] | str, tuple[int, int]]:
    """Where a dataset sweep takes each list from its selection, (offset, count): the warm-up
    first, then every (concurrency, run) in the order they run."""
    out: dict[tuple[int, int] | str, tuple[int, int]] = {
        "warmup": (0, cfg["warmup_requests"])}
    at = cfg["warmup_requests"]
    for c in cfg["concurrency"]:
        for r in range(1, cfg["runs"] + 1):
            out[(c, r)] = (at, list_length(cfg, c))
            at += list_length(cfg, c)
    return out


def prompt_list(cfg: dict[str, Any], tokenize: Tokenize | None, seed: int,
                key: tuple[int, int] | str) -> tuple[list[str], str]:
    """One list of the sweep (the warm-up's, or a (concurrency, run)'s) and how it was made."""
    selection = cfg.get("dataset")
    if selection:
        offset, n = dataset_slices(cfg)[key]
        return (datasets.take(selection, n, offset, "instruments.sweep.dataset"),
                datasets.describe(selection, offset, n))
    assert tokenize is not None
    if isinstance(key, tuple):
        tag, n = f"sweep c{key[0]} r{key[1]}", list_length(cfg, key[0])
    else:
        tag, n = "sweep warmup", cfg["warmup_requests"]
    return (prompts.exact_token_prompts(tokenize, seed, tag, n, cfg["prompt_tokens"]),
            f"{cfg['prompt_tokens']} tokens of random words, unique head")


def run(target: Target, cfg: dict[str, Any]) -> InstrumentRun:
    sampling = target.sampling_params(cfg["output_tokens"])
    tokenize = None if cfg.get("dataset") else target.tokenizer()
    warm, _ = prompt_list(cfg, tokenize, target.seed, "warmup")
    dataset = datasets.label(cfg["dataset"]) if cfg.get("dataset") else prompts.DATASET
    out: InstrumentRun = {"instrument": "sweep", "points": [], "warmup": None}
    if warm:
        out["warmup"] = target.send(warm, sampling, warmup=True)
    for c in cfg["concurrency"]:
        for r in range(1, cfg["runs"] + 1):
            ps, spec = prompt_list(cfg, tokenize, target.seed, (c, r))
            hold = (cfg["min_window_s"], floor(cfg, c)) if cfg.get("min_window_s") else None
            result = target.send(ps, sampling, c, hold=hold)
            target.check_alive(f"sweep point c={c} run {r}")
            out["points"].append(target.record(
                result, point=c, run=r, instrument="sweep", prompt_set=ps, sampling=sampling,
                concurrency=c, warmup=cfg["warmup_requests"], dataset=dataset, prompt_spec=spec))
    return out


def per_point_bars(ax: Axes, view: View, metric: str, ylabel: str, scale: float = 1.0) -> None:
    """A sweep metric per concurrency point (times `scale`: seconds shown as ms), both arms
    side by side, each pair's two values marked and joined by a line, the candidate's change
    annotated with its 95 % interval over boot pairs, a dashed line where the candidate's k
    changes."""
    import pandas as pd

    comparison = view.comparison
    rows = [r for r in comparison["rows"] if r["instrument"] == "sweep"
            and r["metric"] == metric and r["pair"] != "all"]
    df = pd.DataFrame(rows)
    if df.empty:
        ax.text(0.5, 0.5, "no valid comparison: nothing to plot", ha="center")
    else:
        df["point"] = df["point"].astype(int)
        df[["control", "candidate"]] = df[["control", "candidate"]] * scale
        points = sorted(df["point"].unique())
        means = df.groupby("point")[["control", "candidate"]].mean().loc[points]
        w = 0.38
        for off, arm in ((-w / 2, "control"), (w / 2, "candidate")):
            ax.bar([i + off for i in range(len(points))], means[arm], w, label=arm,
                   color=view.colors[arm])
        for _, r in df.iterrows():  # a pair: its control's value joined to its candidate's
            i = points.index(r["point"])
            ax.plot([i - w / 2, i + w / 2], [r["control"], r["candidate"]], "k.-", ms=4,
                    lw=0.6, alpha=0.7)
        effects = {int(r["point"]): r for r in comparison["rows"] if r["pair"] == "all"
                   and r["instrument"] == "sweep" and r["metric"] == metric}
        for i, p in enumerate(points):
            top = df.loc[df["point"] == p, ["control", "candidate"]].to_numpy().max()
            ax.annotate(view.effect_label(effects.get(p)), (i, top), ha="center", va="bottom",
                        fontsize=8)
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi + 0.12 * (hi - lo))  # room for the top annotation's two lines
        ks = view.session_k("candidate", points)
        for i in range(1, len(points)):
            if ks[i] != ks[i - 1]:
                ax.axvline(i - 0.5, color="k", ls="--", lw=1)
                ax.annotate(f"candidate k={ks[i - 1]} | k={ks[i]}", (i - 0.5, ax.get_ylim()[1]),
                            ha="center", va="top", fontsize=8)
        ax.set_xticks(range(len(points)), [f"C{p}" for p in points])
        ax.legend(loc="upper left")
    ax.set_xlabel("concurrency (closed loop); a line joins each boot pair's two values; "
                  "brackets: 95 % interval over boot pairs")
    ax.set_ylabel(ylabel)


def no_rate(ax: Axes, view: View, windows: list[Mapping[str, Any]], positions: int) -> None:
    """A hollow marker on the axis at each position where an arm has no rate in any of its
    windows, not a rate of zero: beyond its k (never drafted there), or where its window mixed
    more draft lengths than the counters can tell apart (knee.analyze.window.prom)."""
    for arm in dict.fromkeys(w["session"].split("-", 1)[1] for w in windows):
        rates = [w["per_position_rate"] for w in windows if w["session"].endswith(f"-{arm}")]
        beyond = [i for i in range(1, positions + 1) if all(i > len(r) for r in rates)]
        unknown = [i for i in range(1, positions + 1) if i not in beyond
                   and all(i > len(r) or r[i - 1] is None for r in rates)]
        for xs, marker, words in ((beyond, "v", "never drafted there"),
                                  (unknown, "o", "no rate: drafts per position not told")):
            if xs:
                ax.plot(xs, [0.0] * len(xs), marker, mfc="none", ms=8, clip_on=False,
                        color=view.colors.get(arm, "k"), label=f"{arm}: {words}")


def draw_acceptance(ax: Axes, view: View) -> None:
    """Per-position acceptance rate of each session's sweep window, the threshold, the knee."""
    speculative = [w for w in view.table if w["speculation"] == "on" and w["instrument"] == "sweep"]
    windows = [w for w in speculative if w["per_position_rate"] is not None]
    boots = Counter(w["session"].split("-", 1)[1] for w in windows)
    labelled: set[str] = set()
    for w in windows:
        arm = w["session"].split("-", 1)[1]
        # a position whose drafts cannot be told (None) is a gap in the line
        rates = [math.nan if r is None else r for r in w["per_position_rate"]]
        xs = range(1, len(rates) + 1)
        # the legend names each arm once, with its boots, not one entry per session
        label = "_nolegend_" if arm in labelled else f"{arm} ({boots[arm]} boots)"
        labelled.add(arm)
        ax.plot(xs, rates, "o-", color=view.colors.get(arm, "k"), alpha=0.8, label=label)
        if w["knee_position"]:
            k = w["knee_position"]
            ax.plot(k, rates[k - 1], "x", color="red", ms=10, mew=2)
    positions = max((len(w["per_position_rate"]) for w in windows), default=0)
    no_rate(ax, view, windows, positions)
    ax.set_xticks(range(1, positions + 1))
    ax.axhline(view.threshold, color="red", ls=":", lw=1,
               label=f"knee threshold {view.threshold}")
    if not windows:
        ax.text(0.5, 0.5, "acceptance withheld in every speculative window (the engine failed "
                "its sampling check)" if speculative else "no speculative window", ha="center",
                transform=ax.transAxes, wrap=True)
    ax.set_xlabel("draft position")
    ax.set_ylabel("acceptance rate (accepted at position / drafts)")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="upper right", fontsize=7)


FIGURES = (
    Figure("throughput", "output throughput per concurrency", "output throughput per concurrency",
           lambda ax, view: per_point_bars(ax, view, "throughput", "output throughput (tok/s)")),
    Figure("ttft", "time to first token per concurrency", "time to first token per concurrency",
           lambda ax, view: per_point_bars(ax, view, "ttft_p50", "TTFT p50 (ms)", 1000.0)),
    Figure("acceptance", "per-position acceptance (sweep windows)", "per-position acceptance",
           draw_acceptance),
)
SPEC = Spec(name="sweep", title="Concurrency sweep", run=run, schema=SCHEMA,
            bar_points=lambda cfg: cfg["concurrency"], figures=FIGURES, role=LOAD,
            acceptance=True, random_prompts=True,
            summary=lambda cfg: f"sweep: concurrency {cfg['concurrency']} x {cfg['runs']} runs",
            datasets=lambda cfg: [("instruments.sweep.dataset", cfg["dataset"], sum(
                n for _, n in dataset_slices(cfg).values()))] if cfg.get("dataset") else [])
