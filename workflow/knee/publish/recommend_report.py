"""recommend/README.md and recommend/recommend.png (+ .svg) from recommendation.json."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knee import instruments
from knee.core import layout
from knee.core.records import Plan
from knee.publish.figures import COLORS, STABLE, plt, save
from knee.publish.numbers import fmt, interval_text, pctf
from knee.publish.readme import workload_caveats

J = "recommendation.json"


def link(value: str, pointer: str) -> str:
    return f"[{value}]({J}#/{pointer})"


def refused_text(rec: Mapping[str, Any]) -> str:
    return (f"# {rec['experiment']}: no k recommendation\n\n"
            f"**Refused:** {rec['reason']}.\n\n"
            "A recommendation needs the sweep at three or more concurrencies, the acceptance "
            "counters of an arm that drafts at one horizon at every batch size, and two "
            "different k measured at two or more concurrencies (both arms count), so that the "
            "step time can be separated from k.\n")


def schedule_lines(rec: Mapping[str, Any]) -> list[str]:
    preds = {(p["concurrency"], p["k"]): (i, p) for i, p in enumerate(rec["predictions"])}
    fixed = rec["best_fixed_k"]
    out = [f"Among k = {', '.join(map(str, rec['allowed_ks']))} (the horizons measured and "
           f"those between them); fixed k={fixed} is the best single k.", "",
           "| concurrency | best k | chosen in resamples | predicted throughput (tok/s) | "
           f"interval | at k={fixed} | gain over k={fixed} | schedule |",
           "|---:|---:|---:|---:|---|---:|---|---:|"]
    for j, b in enumerate(rec["best"]):
        c, k = b["concurrency"], b["best_k"]
        i, p = preds[(c, k)]
        share = b["share_of_resamples"]
        gain = (f"{link(pctf(b['gain_pct']), f'best/{j}/gain_pct')} "
                f"({interval_text(b['interval'], pct=True)})" if k != fixed else "–")
        held = "" if b["resolved"] else " (gain not resolved)"
        out.append(
            f"| {c} | {k} | {'n/a' if share is None else f'{100 * share:.0f}%'} | "
            f"{link(fmt(p['throughput']), f'predictions/{i}/throughput')} | "
            f"{interval_text(p['throughput_interval'])} | "
            f"{fmt(preds[(c, fixed)][1]['throughput'])} | {gain} | "
            f"{link(str(b['k']), f'best/{j}/k')}{held} |")
    return out


def acceptance_lines(rec: Mapping[str, Any]) -> list[str]:
    a = rec["acceptance"]
    rates = ", ".join(link(f"{100 * r:.2f}%", f"acceptance/per_position_rate/{i}")
                      for i, r in enumerate(a["per_position_rate"]))
    tokens = ", ".join(f"k={k}: {fmt(t)}" for k, t in enumerate(a["tokens_per_draft"]))
    return [f"Per-position acceptance at k={a['horizon']} ({fmt(a['drafts'])} drafts over "
            f"{len(a['windows'])} windows): {rates}.", "",
            f"Tokens per drafted step (1 + a_1 + … + a_k): {tokens}."]


def ceiling_lines(rec: Mapping[str, Any]) -> list[str]:
    out = ["| k | step (ms) | tokens per step | modelled decode (tok/s) | ceiling at perfect "
           "acceptance (tok/s) |", "|---:|---:|---:|---:|---:|"]
    for i, c in enumerate(rec["ceiling"]):
        out.append(f"| {c['k']} | {fmt(1000 * c['step_s'])} | {fmt(c['tokens_per_step'])} | "
                   f"{fmt(c['modelled_decode_rate'])} | "
                   f"{link(fmt(c['ceiling_decode_rate']), f'ceiling/{i}/ceiling_decode_rate')} |")
    return out


def fit_lines(rec: Mapping[str, Any]) -> list[str]:
    m, e = rec["step_model"], rec["throughput_fit_error_pct"]
    median = f"{e['median_abs']:.1f}%"
    coef = ", ".join(f"{t}: {1000 * c:.4g} ms" for t, c in zip(m["terms"], m["coef"],
                                                               strict=True))
    out = [f"Step model over {m['observations']} (session, concurrency) points: {coef}; "
           f"relative error rms {m['rms_rel_error_pct']:.1f}%, max "
           f"{m['max_rel_error_pct']:.1f}%. Throughput at the measured points: median "
           f"absolute error "
           f"{link(median, 'throughput_fit_error_pct/median_abs')}, "
           f"max {e['max_abs']:.1f}%.", "",
           "| arm | concurrency | k | measured (tok/s) | model (tok/s) | error |",
           "|---|---:|---:|---:|---:|---:|"]
    for f in rec["measured"]:
        out.append(f"| {f['arm']} | {f['concurrency']} | {f['k']} | {fmt(f['measured'])} | "
                   f"{fmt(f['predicted'])} | {pctf(f['error_pct'])} |")
    return out


def throughput_knee_lines(rec: Mapping[str, Any]) -> list[str]:
    out = []
    for arm, k in rec["knees"].items():
        what = (f"c ≈ {fmt(k['knee'])} (slope {fmt(k['slope_before'])} then "
                f"{fmt(k['slope_after'])} tok/s per stream)" if k["knee"] is not None
                else f"none: {k['reason']}")
        out.append(f"- {arm}: {what}")
    x = rec["crossover"]
    out.append(f"- crossover (k={x['k']} starts to win): "
               + (f"c={x['concurrency']}" if x["concurrency"] is not None else "none")
               + (f" ({x['reason']})" if x["reason"] else ""))
    return out


def readme(rec: Mapping[str, Any], plan: Plan) -> str:
    if rec["status"] != "recommended":
        return refused_text(rec)
    sched = rec["speculative_config"]
    bands = sched["num_speculative_tokens_per_batch_size"]
    lines = [f"# {rec['experiment']}: which k at which load", "",
             f"Recommended: `num_speculative_tokens_per_batch_size: {bands}` "
             f"with `num_speculative_tokens: {sched['num_speculative_tokens']}` "
             f"([{J}]({J}#/speculative_config)); the best fixed k is "
             f"{link(str(rec['best_fixed_k']), 'best_fixed_k')}. Intervals: "
             f"{rec['interval']['confidence']:.0%}, over {rec['interval']['resamples']} "
             f"resamples of the {rec['interval']['pairs']} {rec['interval']['level']}.", "",
             "Check it with the paired run it pre-registers: `snakemake --config "
             f"experiment=results/{rec['experiment']}/{layout.VERIFY}` "
             "([verify.yaml](verify.yaml)).", "", "![predicted throughput per k](recommend.png)",
             "", "## Best k per concurrency", "", *schedule_lines(rec), "",
             "## Throughput knee and crossover", "", *throughput_knee_lines(rec), "",
             "## Acceptance", "", *acceptance_lines(rec), "",
             "## Ceiling model (lowest concurrency)", "", *ceiling_lines(rec), "",
             "## How well the model fits what was measured", "", *fit_lines(rec), "",
             "## Method", "", rec["method"], "", rec["knee_method"], ""]
    windows = [Path(w).name for w in rec["acceptance"]["windows"]]
    read = [n for n in instruments.names() if any(w.startswith(f"{n}.") for w in windows)]
    said = workload_caveats(plan, read)
    return "\n".join([*lines, "## Caveats", "", *[f"- {c}" for c in said], ""])


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
