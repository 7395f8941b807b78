"""The speculation model behind `knee recommend` (pure): acceptance per draft position, tokens
per step at a shorter horizon, a step-time model over (concurrency, k), the ceiling at perfect
acceptance, the throughput knee, and a k schedule.

Definitions (the second reference write-up's): per-position rate a_i = accepted at position i /
drafts; per-user decode rate = tokens per step / step time; the ceiling at perfect acceptance is
(k + 1) / step time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from knee.core.errors import KneeError

# the columns of the step-time model: step(c, k) = b0 + b1 c + b2 k + b3 c k
STEP_TERMS = ("1", "c", "k", "c*k")
KNEE_SLOPE_RATIO = 0.25  # past the knee throughput rises at most this share of the slope before
KNEE_SSE_RATIO = 0.5  # and two segments explain the curve at least twice as well as one line
TIE_PCT = 1.0  # predictions within this of the best are a tie, won by the smaller k


def session_k(plan: dict, arm: str, points: list[int]) -> list[int]:
    """k at each concurrency of an arm: 0 with speculation off, the batch-size schedule's band
    (capped at num_speculative_tokens) where one covers c, num_speculative_tokens otherwise."""
    spec = plan["arms"][arm].get("speculative_config") or {}
    k = spec.get("num_speculative_tokens") or 0
    bands = spec.get("num_speculative_tokens_per_batch_size") or []
    out = []
    for c in points:
        hit = [b[2] for b in bands if b[0] <= c <= b[1]]
        out.append(min(hit[0], k) if hit and k else k)
    return out


def position_rates(drafts: float, accepted_per_pos: list[float]) -> list[float]:
    """a_i = accepted at position i / drafts (the share of drafts that reached position i)."""
    if not drafts or drafts <= 0:
        raise KneeError("acceptance: no drafts counted: per-position rates are undefined")
    return [a / drafts for a in accepted_per_pos]


def tokens_per_step(rates: list[float], k: int) -> float:
    """Expected tokens per drafted step at horizon k <= len(rates): 1 + sum of a_1..a_k."""
    if k > len(rates):
        raise KneeError(f"acceptance: k={k} is beyond the measured horizon ({len(rates)})")
    return 1.0 + float(sum(rates[:k]))


def truncated_tokens(measured: float, rates: list[float], k: int) -> float:
    """Tokens per step at horizon k, from tokens per step measured at the full horizon: the
    accepted share above the one token a step always yields scales with sum(a_1..a_k)."""
    full = sum(rates)
    if k == 0 or full <= 0:
        return 1.0
    return 1.0 + (measured - 1.0) * sum(rates[:k]) / full


def ceiling_rate(k: int, step_s: float) -> float:
    """Per-user decode rate at perfect acceptance: (k + 1) / step time."""
    return (k + 1) / step_s


@dataclass(frozen=True)
class StepModel:
    """step(c, k) in seconds, linear in 1, c, k and c*k, fitted by least squares."""

    coef: tuple[float, ...]
    rms_rel_error: float
    max_rel_error: float
    n: int

    def __call__(self, c: float, k: float) -> float:
        return float(np.dot(self.coef, design(c, k)))


def design(c: float, k: float) -> list[float]:
    return [1.0, float(c), float(k), float(c) * float(k)]


def identifiable(points: list[tuple[float, float]]) -> bool:
    """Whether the measured (c, k) points pin down every term of the step model, with one
    point to spare (else its fit error is zero by construction and says nothing)."""
    unique = sorted(set(points))
    return len(unique) > len(STEP_TERMS) and \
        np.linalg.matrix_rank(np.array([design(c, k) for c, k in unique])) == len(STEP_TERMS)


def fit_step_model(obs: list[tuple[float, float, float]]) -> StepModel:
    """Least squares over (c, k, step seconds) observations; the fit error is relative."""
    x = np.array([design(c, k) for c, k, _ in obs])
    y = np.array([s for _, _, s in obs])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    rel = (x @ coef - y) / y
    return StepModel(tuple(float(v) for v in coef), float(np.sqrt(np.mean(rel ** 2))),
                     float(np.max(np.abs(rel))), len(obs))


def hinge_fit(x: np.ndarray, y: np.ndarray, at: float) -> tuple[np.ndarray, float]:
    """Continuous two-segment line with its break at `at`: coefficients and SSE."""
    m = np.column_stack([np.ones_like(x), x, np.maximum(0.0, x - at)])
    coef, *_ = np.linalg.lstsq(m, y, rcond=None)
    return coef, float(np.sum((m @ coef - y) ** 2))


def throughput_knee(conc: list[float], thr: list[float], grid: int = 200) -> dict:
    """The concurrency past which throughput stops rising: a continuous two-segment fit, its
    break searched between the second and the second-to-last point (each segment keeps two
    points). Accepted only when the slope after the break is at most KNEE_SLOPE_RATIO of the
    slope before and two segments leave at most KNEE_SSE_RATIO of one line's squared error;
    otherwise no knee in the measured range, with the reason."""
    x, y = np.asarray(conc, float), np.asarray(thr, float)
    if len(x) < 4:
        return {"knee": None, "reason": f"{len(x)} concurrency points: a two-segment fit needs 4"}
    line = np.polyfit(x, y, 1)
    sse_line = float(np.sum((np.polyval(line, x) - y) ** 2))
    best = None
    for at in np.linspace(x[1], x[-2], grid):
        coef, sse = hinge_fit(x, y, at)
        if best is None or sse < best[2]:
            best = (float(at), coef, sse)
    at, coef, sse = best
    before, after = float(coef[1]), float(coef[1] + coef[2])
    out = {"knee": None, "break": at, "slope_before": before, "slope_after": after,
           "sse_ratio": sse / sse_line if sse_line > 0 else 0.0}
    if before <= 0:
        out["reason"] = "throughput does not rise before the break"
    elif after > KNEE_SLOPE_RATIO * before:
        out["reason"] = (f"throughput still rising past c={at:.1f} ({after:.3g} per stream "
                         f"against {before:.3g} before): no knee in the measured range")
    elif out["sse_ratio"] > KNEE_SSE_RATIO:
        out["reason"] = "two segments fit no better than one line: no clear knee"
    else:
        out["knee"], out["reason"] = at, None
    return out


def schedule(conc: list[int], best_k: list[int], max_seqs: int) -> list[list[int]]:
    """num_speculative_tokens_per_batch_size bands [lo, hi, k] covering 1..max_seqs: a measured
    concurrency's k holds up to the next measured concurrency at which the best k changes."""
    bands: list[list[int]] = []
    for i, (c, k) in enumerate(zip(conc, best_k, strict=True)):
        lo = 1 if i == 0 else conc[i - 1] + 1
        if bands and bands[-1][2] == k:
            bands[-1][1] = c
        else:
            bands.append([lo, c, k])
    bands[-1][1] = max(bands[-1][1], max_seqs)
    return bands


def best_k(pred: dict[int, float]) -> int:
    """The k with the highest prediction; within TIE_PCT of it, the smaller k."""
    top = max(pred.values())
    return min(k for k, v in pred.items() if v >= top * (1 - TIE_PCT / 100))
