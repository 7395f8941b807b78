"""The protocol planner: the fewest GPU minutes that resolve every bar rule to a target MDE.

From a calibration (knee.analyze.adjust.calibration): a boot's noise in each bar figure once the
registered slope has taken the host speed out (each boot left out of the fit that predicts it:
out of sample), split where the figure is a mean over sweep runs into a run-to-run and a
between-boot part; and what a session costs (a fixed part, and each sweep run by point). A pair
differs by two boots, so a rule's MDE at n pairs and r runs a point is knee's own
(knee.analyze.inference.mde_pct) with a pair SD of sqrt(2 (between^2 + within^2 / r)).
Requests per stream stay the calibration's: no other length was measured, so none is
extrapolated to.

A calibration's noise is itself an estimate from a few boots: planned from it as it stands, a
protocol misses its target MDE about half the time. knee plans from its upper confidence bound
instead (one-sided, LEVEL: the chi-square bound on a standard deviation with the fit's degrees
of freedom, the boots less a mean per group and the slope), so that the target holds with that
confidence, and shows every predicted MDE as a range, from the noise as estimated to its bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from typing import Any, TypedDict

from scipy import stats

from knee import instruments
from knee.analyze import inference
from knee.core.errors import KneeError
from knee.core.records import BarRule, Config, Plan
from knee.core.records.calibration import Calibration, Costs, Figure
from knee.plan import stopping
from knee.plan.adjust import check_facts, covariate_cpus, figure_of

MAX_PAIRS = 40
MAX_RUNS = 6
LEVEL = 0.9  # the one-sided confidence of the noise's upper bound a protocol is planned from


class PricedProtocol(TypedDict):
    """A protocol the planner prices: its pairs, its runs a sweep point, its GPU minutes and
    each rule's predicted MDE (a range: predicted_range)."""

    pairs: int
    runs: int
    gpu_minutes: float
    mde_pct: dict[str, list[float] | None]


class Planned(TypedDict):
    """What `knee design` answers: the cheapest protocols adjusted and not, the config's own."""

    target_mde_pct: float
    alpha: float
    requests_per_stream: int | None
    adjusted: PricedProtocol | None
    unadjusted: PricedProtocol | None
    config: PricedProtocol
    notes: list[str]


def noise_df(figure: Figure, adjusted: bool = True) -> int:
    """The degrees of freedom of a figure's between-boot noise: its boots less a mean per group
    of identical servers, and less the slope where the figure is adjusted."""
    return max(1, int(figure["boots"]) - int(figure["groups"]) - (1 if adjusted else 0))


def upper_factor(figure: Figure, adjusted: bool = True) -> float:
    """How much larger the noise may be, at LEVEL confidence, than the calibration's estimate:
    sqrt(df / chi2 quantile at 1 - LEVEL)."""
    df = noise_df(figure, adjusted)
    return math.sqrt(df / chi2_low(df))


@cache
def chi2_low(df: int) -> float:
    """The chi-square quantile at 1 - LEVEL: the planner's search asks it for every protocol."""
    return float(stats.chi2.ppf(1 - LEVEL, df))


def pair_sd(figure: Figure, runs: int, adjusted: bool = True,
            bound: bool = False) -> float:
    """The log SD of one pair's difference in this figure at `runs` sweep runs a point (with
    `bound`, at the noise's upper confidence bound)."""
    cv = figure["left_out"]["adjusted_cv_pct" if adjusted else "unadjusted_cv_pct"] / 100
    parts = figure.get("runs")
    if parts:
        within = parts["within_cv_pct"] / 100
        cv2 = max(0.0, cv ** 2 - within ** 2 / parts["runs"]) + within ** 2 / runs
    else:
        cv2 = cv ** 2
    return math.sqrt(2 * cv2) * (upper_factor(figure, adjusted) if bound else 1.0)


def predicted_mde(figure: Figure, pairs: int, runs: int, alpha: float,
                  adjusted: bool = True, bound: bool = False) -> float | None:
    return inference.mde_pct(
        inference.Effect(pairs, 0.0, pair_sd(figure, runs, adjusted, bound)), alpha)


def predicted_range(figure: Figure, pairs: int, runs: int, alpha: float,
                    adjusted: bool = True) -> list[float] | None:
    """The predicted MDE from the noise as the calibration estimates it to its upper bound."""
    low, high = (predicted_mde(figure, pairs, runs, alpha, adjusted, bound)
                 for bound in (False, True))
    return None if low is None or high is None else [round(low, 2), round(high, 2)]


def session_s(costs: Costs, runs: int) -> float:
    """One session's wall time with `runs` runs at every sweep point (a warm compile cache)."""
    if (fixed := costs["fixed_s"]) is None:
        raise KneeError("the calibration has no session cost (costs.fixed_s is null: none of "
                        "its sessions has a stop receipt), and a protocol is priced by it: "
                        "calibrate on folders whose sessions finished")
    return fixed + math.fsum(runs * s for s in costs["run_s"].values())


def gpu_minutes(costs: Costs, pairs: int, runs: int) -> float:
    """Every session of `pairs` pairs, the first boot with a cold compile cache."""
    cold: float = (costs.get("cold_boot_s") or costs["boot_s"]) - costs["boot_s"]
    return (2 * pairs * session_s(costs, runs) + cold) / 60


def cheapest(document: Calibration, rules: list[BarRule], alpha: float,
             target_pct: float, adjusted: bool = True) -> PricedProtocol | None:
    """The protocol (pairs, runs) of least GPU time whose every rule's MDE, at the noise's
    upper confidence bound, is at most the target; None where none up to MAX_PAIRS pairs and
    MAX_RUNS runs is. Each rule's MDE is given as a range (predicted_range)."""
    figures = {r["name"]: figure_of(document, r) for r in rules}
    best: PricedProtocol | None = None
    for runs in range(1, MAX_RUNS + 1):
        for pairs in range(2, MAX_PAIRS + 1):
            mdes = {n: predicted_range(f, pairs, runs, alpha, adjusted)
                    for n, f in figures.items()}
            if all(m is not None and m[1] <= target_pct for m in mdes.values()):
                minutes = gpu_minutes(document["costs"], pairs, runs)
                if best is None or minutes < best["gpu_minutes"]:
                    best = {"pairs": pairs, "runs": runs, "gpu_minutes": round(minutes, 1),
                            "mde_pct": mdes}
                break
    return best


def plan_protocol(document: Calibration, config: Config, target_pct: float) -> Planned:
    """What `knee design` prints: the adjusted and the unadjusted cheapest protocols, and the
    config's own protocol's predicted MDE per rule."""
    rules, alpha = config["bar"]["rules"], config["bar"]["alpha"]
    sweep = config["instruments"][instruments.role(instruments.LOAD)]
    check_facts(document, {"covariate_cpus": covariate_cpus(config.get("runtime"))},
                "knee design: --config")
    costs = document["costs"]
    notes = []
    if sweep.get("requests_per_stream") != costs.get("requests_per_stream"):
        notes.append(f"the calibration measured {costs.get('requests_per_stream')} requests a "
                     f"stream and this config asks {sweep.get('requests_per_stream')}: its "
                     "costs and noise are the calibration's")
    pairs = stopping.bounds(config["protocol"]["pairs"])[1]  # a sequential stop's most
    return {"target_mde_pct": target_pct, "alpha": alpha,
            "requests_per_stream": costs.get("requests_per_stream"),
            "adjusted": cheapest(document, rules, alpha, target_pct),
            "unadjusted": cheapest(document, rules, alpha, target_pct, adjusted=False),
            "config": {"pairs": pairs, "runs": sweep["runs"],
                       "gpu_minutes": round(gpu_minutes(costs, pairs, sweep["runs"]), 1),
                       "mde_pct": {r["name"]: predicted_range(
                           figure_of(document, r), pairs, sweep["runs"], alpha)
                           for r in rules}},
            "notes": notes}


def protocol_block(best: PricedProtocol) -> str:
    """The YAML to paste into the config for a planned protocol."""
    return (f"protocol:\n  pairs: {best['pairs']}\ninstruments:\n"
            f"  {instruments.role(instruments.LOAD)}:\n    runs: {best['runs']}\n")


def report(out: Planned) -> str:
    """The planner's answer as text: each protocol, its GPU minutes and each rule's MDE."""
    def line(name: str, p: PricedProtocol | None) -> str:
        if p is None:
            return (f"{name}: no protocol up to {MAX_PAIRS} pairs and {MAX_RUNS} runs reaches "
                    f"an MDE of {out['target_mde_pct']}% on every rule")
        mdes = ", ".join(f"{r} {m[0]:.2f}–{m[1]:.2f}%" if m else f"{r} unknown"
                         for r, m in p["mde_pct"].items())
        runs = f"{p['runs']} run{'s' if p['runs'] != 1 else ''}"
        return (f"{name}: {p['pairs']} pairs, {runs} a sweep point, "
                f"{out['requests_per_stream']} requests a stream: {p['gpu_minutes']} GPU "
                f"minutes; predicted MDE {mdes}")
    lines = [f"target MDE {out['target_mde_pct']}% on every rule (alpha {out['alpha']}, "
             f"80% power) at the upper {LEVEL:.0%} confidence bound of the calibration's noise; "
             "each predicted MDE from the noise as estimated to that bound:",
             line("adjusted (bar.adjust)", out["adjusted"]),
             line("unadjusted", out["unadjusted"]),
             line("this config as it stands (adjusted)", out["config"])]
    lines += [f"note: {n}" for n in out["notes"]]
    if out["adjusted"]:
        lines += ["", "# the protocol to paste:", protocol_block(out["adjusted"]).rstrip()]
    return "\n".join(lines)


def realized(plan: Plan, bar: Mapping[str, Any]) -> dict[str, Any] | None:
    """An adjusted run's README section: per rule, the registered slope, the balance check,
    the adjusted and the as-measured effect, the calibration's boot noise without and with the
    adjustment, and the MDE the calibration predicted for this protocol beside the realized."""
    calibration = plan.get("calibration")
    if not calibration:
        return None
    document = calibration["document"]
    runs = plan["instruments"].get(instruments.role(instruments.LOAD), {}).get("runs", 1)
    rows = []
    for r in bar["rules"]:
        f = figure_of(document, {**r, "name": r["rule"]})
        applied = (r.get("adjustment") or {}).get("applied", False)
        rows.append({**r, "slope": f["slope"], "applied": applied,
                     "balance": (r.get("adjustment") or {}).get("balance"),
                     "as_measured": r.get("unadjusted") or r,
                     "boot_cv": [f["left_out"]["unadjusted_cv_pct"],
                                 f["left_out"]["adjusted_cv_pct"]],
                     "predicted_mde": predicted_range(f, r.get("pairs") or bar["pairs"], runs,
                                                      bar["alpha_per_look"], applied)})
    return {"file": calibration["file"], "sha256": calibration["sha256"],
            "folders": [d["name"] for d in document["folders"]],
            "timing_only": document.get("timing_only") or [],
            "tolerance_pct": plan["bar"]["adjust"]["tolerance_pct"], "rows": rows}
