"""The parts of a recommendation, from the fitted model and its pair resamples (pure)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from knee import instruments
from knee.analyze.recommend import speculation
from knee.core.records import Plan, Recommendation
from knee.core.records.recommendation import (
    AcceptanceWindow,
    BestAt,
    CeilingRow,
    Crossover,
    Figures,
    MeasuredFit,
    Observation,
    PredictedChange,
    PredictedVsMeasured,
    Prediction,
    ThroughputKnee,
    VerifyGain,
)

# (concurrency, k) -> each resample's prediction, under "throughput" and "decode_rate"
Resamples = dict[str, dict[tuple[int, int], list[float]]]


class Fitted(Protocol):
    """What the recommendation reads of a fitted model (knee.analyze.recommend.Model)."""
    rates: list[float]
    horizon: int
    step: speculation.StepModel
    availability: dict[int, float]

    def tokens(self, c: int, k: int) -> float: ...

    def predict(self, c: int, k: int) -> Figures: ...

RESAMPLES = 1000
CONFIDENCE = 0.95
LEVEL = "boot pairs"
METHOD = ("Step time per (session, concurrency): the median over requests of the chunk span "
          "divided by (chunks - 1), one stream chunk per engine step; tokens per step: (output "
          "tokens - 1) / (chunks - 1). Per-position acceptance a_i pooled over the probe and "
          "sweep windows that drafted at the longest horizon K; tokens per step at k scale the "
          "excess over one token measured at c by sum(a_1..a_k) / sum(a_1..a_K), times "
          "gamma(k): the measured excess at a second, shorter horizon against that scaling "
          "(pooled over concurrencies; linear in k between the horizons measured, 1 at K), "
          "since a drafter may find full-length drafts more often at a shorter horizon. "
          "Step model: "
          "step(c, k) = b0 + b1 c + b2 k + b3 c k, least squares over every session of both "
          "arms. Throughput at c: eta(c) c N / (TTFT(c) + (N - 1) step / tokens per step), "
          "eta(c) the measured ratio of throughput to that closed-loop formula. Best k per "
          "concurrency: the highest predicted throughput, ties within "
          f"{speculation.TIE_PCT:g} % to the smaller k, among the k between the shortest and "
          "the longest horizon measured "
          "(predictions beyond them are marked extrapolated); the schedule keeps the best fixed "
          "k at a concurrency unless the best k's predicted gain over it has an interval above "
          f"zero. Intervals: {RESAMPLES} resamples of the boot pairs (with "
          "replacement), the whole chain refitted on each, percentile interval at "
          f"{CONFIDENCE:.0%}.")
THROUGHPUT_KNEE_METHOD = (
    "Throughput knee: a continuous two-segment line fitted to the arm's throughput "
    "per concurrency (geometric mean over its boots), the break searched between "
    "the second and the second-to-last point; a knee only when the slope after it "
    f"is at most {speculation.KNEE_SLOPE_RATIO:g} of the slope before and two segments "
    f"leave at most {speculation.KNEE_SSE_RATIO:g} of one line's squared error.")


def load() -> str:
    """The instrument that measures throughput per concurrency (knee.instruments.LOAD), whose
    windows the recommendation models (the concurrency sweep: "sweep" in names here)."""
    return instruments.role(instruments.LOAD)


def interval(values: list[float]) -> list[float] | None:
    """The percentile interval at CONFIDENCE over resampled values."""
    if len(values) < 2:
        return None
    lo = (1 - CONFIDENCE) / 2 * 100
    return [float(np.percentile(values, lo)), float(np.percentile(values, 100 - lo))]


def gmean(values: list[float]) -> float:
    return float(math.exp(np.mean(np.log(values))))


def predictions(model: Fitted, conc: list[int], ks: list[int], boot: Resamples,
                allowed: list[int]) -> list[Prediction]:
    out: list[Prediction] = []
    for c in conc:
        for k in ks:
            p = model.predict(c, k)
            out.append(Prediction(
                concurrency=c, k=k, **p, extrapolated=k not in allowed,
                throughput_interval=interval(boot["throughput"][(c, k)]),
                decode_rate_interval=interval(boot["decode_rate"][(c, k)])))
    return out


def measured_fit(plan: Plan, rows: list[Observation], model: Fitted) -> list[MeasuredFit]:
    """Each arm's measured throughput per concurrency (geometric mean over its boots) against
    the model's prediction at the arm's k there."""
    out: list[MeasuredFit] = []
    for arm in plan["arms"]:
        for c in sorted({r["c"] for r in rows}):
            here = [r for r in rows if r["arm"] == arm and r["c"] == c]
            k = here[0]["k"]
            measured = gmean([r["throughput"] for r in here])
            pred = model.predict(c, k)["throughput"]
            out.append({"arm": arm, "concurrency": c, "k": k, "measured": measured,
                        "predicted": pred, "error_pct": 100 * (pred / measured - 1),
                        "step_s": float(np.median([r["step_s"] for r in here])),
                        "tokens_per_step": float(np.mean([r["tokens_per_step"] for r in here]))})
    return out


def crossover(conc: list[int], best: list[int], k_min: int) -> Crossover:
    """The first measured concurrency from which the smallest k wins at every larger one."""
    j = len(conc)
    while j > 0 and best[j - 1] == k_min:
        j -= 1
    if j == len(conc):
        return {"k": k_min, "concurrency": None, "between": None,
                "reason": f"k={k_min} does not win at the highest measured concurrency "
                          f"(c={conc[-1]}): no crossover in the measured range"}
    return {"k": k_min, "concurrency": conc[j], "between": [conc[j - 1], conc[j]] if j else None,
            "reason": None if j else f"k={k_min} wins at every measured concurrency"}


def throughput_knees(plan: Plan, rows: list[Observation]) -> dict[str, ThroughputKnee]:
    out: dict[str, ThroughputKnee] = {}
    for arm in plan["arms"]:
        conc = sorted({r["c"] for r in rows})
        thr = [gmean([r["throughput"] for r in rows if r["arm"] == arm and r["c"] == c])
               for c in conc]
        out[arm] = speculation.throughput_knee(conc, thr)
    return out


def ceiling(model: Fitted, c: int, ks: list[int]) -> list[CeilingRow]:
    """The second reference write-up's ceiling model per k, at the lowest concurrency."""
    out: list[CeilingRow] = []
    for k in ks:
        step = model.step(c, k)
        out.append({"k": k, "concurrency": c, "step_s": step,
                    "tokens_per_step": model.tokens(c, k),
                    "modelled_decode_rate": model.tokens(c, k) / step,
                    "ceiling_decode_rate": speculation.ceiling_rate(k, step)})
    return out


def verify_gains(conc: list[int], sched_k: list[int], fixed_k: int, model: Fitted,
                 boot: Resamples) -> list[VerifyGain]:
    """Predicted throughput change of the schedule against the best fixed k at each c, with
    its interval over the same resamples (each resample's two predictions are paired)."""
    out: list[VerifyGain] = []
    for c, k in zip(conc, sched_k, strict=True):
        a, b = boot["throughput"][(c, fixed_k)], boot["throughput"][(c, k)]
        ratios = [100 * (y / x - 1) for x, y in zip(a, b, strict=True)]
        point = 100 * (model.predict(c, k)["throughput"] /
                       model.predict(c, fixed_k)["throughput"] - 1)
        out.append({"concurrency": c, "k": k, "control_k": fixed_k, "gain_pct": point,
                    "interval": interval(ratios)})
    return out


def allowed_ks(rows: list[Observation], horizon: int) -> list[int]:
    """The k a schedule may choose: those between the shortest and the longest horizon measured
    (and 0 where speculation off was measured); predictions beyond them are extrapolations."""
    spec = sorted({r["k"] for r in rows if r["k"] > 0})
    return ([0] if any(r["k"] == 0 for r in rows) else []) + list(range(spec[0], horizon + 1))


def choose(conc: list[int], allowed: list[int], by: Mapping[tuple[int, int], float],
           boot: Resamples) -> tuple[int, list[BestAt]]:
    """The best fixed k (highest geometric-mean prediction over the concurrencies) and, per
    concurrency, the best k; a concurrency keeps the fixed k unless the best one's predicted
    gain over it has an interval above zero."""
    fixed = max(allowed, key=lambda k: gmean([by[(c, k)] for c in conc]))
    out: list[BestAt] = []
    for c in conc:
        best = speculation.best_k({k: by[(c, k)] for k in allowed})
        draws = len(boot["throughput"][(c, fixed)])
        picks = [speculation.best_k({k: boot["throughput"][(c, k)][i] for k in allowed})
                 for i in range(draws)]
        ratios = [100 * (y / x - 1) for x, y in zip(
            boot["throughput"][(c, fixed)], boot["throughput"][(c, best)], strict=True)]
        iv = interval(ratios)
        resolved = best == fixed or bool(iv and iv[0] > 0)
        out.append({"concurrency": c, "best_k": best,
                    "share_of_resamples": float(np.mean([p == best for p in picks]))
                    if picks else None,
                    "gain_pct": 100 * (by[(c, best)] / by[(c, fixed)] - 1), "interval": iv,
                    "resolved": resolved, "k": best if resolved else fixed})
    return fixed, out


def assemble(plan: Plan, rows: list[Observation], windows: Sequence[AcceptanceWindow],
             model: Fitted, ks: list[int], boot: Resamples) -> Recommendation:
    conc = plan["instruments"][load()]["concurrency"]
    allowed = allowed_ks(rows, model.horizon)
    preds = predictions(model, conc, ks, boot, allowed)
    by = {(p["concurrency"], p["k"]): p["throughput"] for p in preds}
    fixed, best = choose(conc, allowed, by, boot)
    chosen = [b["k"] for b in best]
    max_seqs = max(int(a["args"].get("max-num-seqs", conc[-1])) for a in plan["arms"].values())
    bands = speculation.schedule(conc, chosen, max_seqs)
    fit = measured_fit(plan, rows, model)
    errors = [abs(f["error_pct"]) for f in fit]
    return {
        "experiment": plan["name"], "status": "recommended", "reason": None,
        "method": METHOD, "knee_method": THROUGHPUT_KNEE_METHOD,
        "interval": {"level": LEVEL, "resamples": RESAMPLES, "confidence": CONFIDENCE,
                     "pairs": len({r["pair"] for r in rows})},
        "acceptance": {"horizon": model.horizon, "per_position_rate": model.rates,
                       "windows": [w["file"] for w in windows],
                       "drafts": float(sum(w["drafts"] for w in windows)),
                       "accepted_per_pos": [float(v) for v in np.sum(
                           [w["accepted_per_pos"] for w in windows], axis=0)],
                       "tokens_per_draft": [speculation.tokens_per_step(model.rates, k)
                                            for k in range(model.horizon + 1)],
                       "draft_availability": [{"k": k, "gamma": g} for k, g in
                                              sorted(model.availability.items())]},
        "step_model": {"terms": list(speculation.STEP_TERMS), "coef": list(model.step.coef),
                       "observations": model.step.n,
                       "rms_rel_error_pct": 100 * model.step.rms_rel_error,
                       "max_rel_error_pct": 100 * model.step.max_rel_error},
        "ks": ks, "allowed_ks": allowed, "concurrency": conc, "predictions": preds,
        "measured": fit,
        "throughput_fit_error_pct": {"median_abs": float(np.median(errors)),
                                     "max_abs": float(max(errors))},
        "best": best, "schedule": bands, "best_fixed_k": fixed,
        "speculative_config": {"num_speculative_tokens": max(b[2] for b in bands),
                               "num_speculative_tokens_per_batch_size": bands},
        "crossover": crossover(conc, chosen, allowed[0]),
        "knees": throughput_knees(plan, rows),
        "ceiling": ceiling(model, conc[0], ks),
        "verify": verify_gains(conc, chosen, fixed, model, boot),
    }


def refused(plan: Plan, reason: str) -> Recommendation:
    return {"experiment": plan["name"], "status": "refused", "reason": reason,
            "method": METHOD, "knee_method": THROUGHPUT_KNEE_METHOD}


def predicted_vs_measured(rec: Recommendation, plan: Plan,
                          comparison: Mapping[str, Any]) -> list[PredictedVsMeasured]:
    """A verification run's sweep throughput per arm and concurrency (geometric mean over its
    pairs) against the recommendation's prediction at the arm's k there, with the error."""
    by = {(p["concurrency"], p["k"]): p for p in rec["predictions"]}
    name = load()
    conc = plan["instruments"][name]["concurrency"]
    rows = [r for r in comparison["rows"] if r["instrument"] == name
            and r["metric"] == "throughput" and isinstance(r.get("pair"), int)]
    out: list[PredictedVsMeasured] = []
    for arm in plan["arms"]:
        for c, k in zip(conc, speculation.session_k(plan, arm, conc), strict=True):
            vals = [r[arm] for r in rows if r["point"] == c and r.get(arm)]
            pred = by.get((c, k))
            if not vals or pred is None:
                continue
            measured = gmean(vals)
            out.append({"arm": arm, "concurrency": c, "k": k, "predicted": pred["throughput"],
                        "interval": pred["throughput_interval"], "measured": measured,
                        "error_pct": 100 * (pred["throughput"] / measured - 1)})
    return out


def predicted_changes(rec: Recommendation, plan: Plan,
                      comparison: Mapping[str, Any]) -> list[PredictedChange]:
    """A verification run's candidate-against-control throughput change per concurrency: the
    change the recommendation predicted (its interval over the measured run's pair resamples)
    against the change measured across the verification's pairs (its interval over them). A
    change between arms of one run cancels the host's speed on the day, which the absolute
    prediction carries."""
    by = {(p["concurrency"], p["k"]): p["throughput"] for p in rec["predictions"]}
    gains = {(v["concurrency"], v["k"], v["control_k"]): v for v in rec["verify"]}
    name = load()
    conc = plan["instruments"][name]["concurrency"]
    ks = {arm: speculation.session_k(plan, arm, conc) for arm in ("control", "candidate")}
    out: list[PredictedChange] = []
    for i, c in enumerate(conc):
        kc, kx = ks["control"][i], ks["candidate"][i]
        row = next((r for r in comparison["rows"] if r["instrument"] == name
                    and r["metric"] == "throughput" and r["point"] == c
                    and r["pair"] == "all"), None)
        if row is None or (c, kc) not in by or (c, kx) not in by:
            continue
        gain = gains.get((c, kx, kc))
        predicted = 100 * (by[(c, kx)] / by[(c, kc)] - 1)
        out.append({"concurrency": c, "control_k": kc, "k": kx, "predicted_pct": predicted,
                    "predicted_interval": gain["interval"] if gain else None,
                    "measured_pct": row["delta_pct"], "measured_interval": row["interval"],
                    "difference_pct": row["delta_pct"] - predicted})
    return out
