"""The speculation model behind `knee recommend` (pure): acceptance per draft position, tokens
per step at a shorter horizon, a step-time model over (concurrency, k), the ceiling at perfect
acceptance, the throughput knee, and a k schedule.

Definitions (the second reference write-up's): per-position rate a_i = accepted at position i /
drafts; per-user decode rate = tokens per step / step time; the ceiling at perfect acceptance is
(k + 1) / step time.

Every fit here is solved exactly in rational arithmetic and rounded once to a float, with no
linear algebra library: a BLAS picks its kernels by CPU, and its last digits with them, so the
same raw files would give another recommendation's bytes on another machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from knee.core.errors import KneeError
from knee.core.records import Plan
from knee.core.records.recommendation import ThroughputKnee

# the columns of the step-time model: step(c, k) = b0 + b1 c + b2 k + b3 c k
STEP_TERMS = ("1", "c", "k", "c*k")
KNEE_SLOPE_RATIO = 0.25  # past the knee throughput rises at most this share of the slope before
KNEE_SSE_RATIO = 0.5  # and two segments explain the curve at least twice as well as one line
TIE_PCT = 1.0  # predictions within this of the best are a tie, won by the smaller k


def session_k(plan: Plan, arm: str, points: list[int]) -> list[int]:
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
    return 1.0 + math.fsum(rates[:k])


def truncated_tokens(measured: float, rates: list[float], k: int) -> float:
    """Tokens per step at horizon k, from tokens per step measured at the full horizon: the
    accepted share above the one token a step always yields scales with sum(a_1..a_k)."""
    full = math.fsum(rates)
    if k == 0 or full <= 0:
        return 1.0
    return 1.0 + (measured - 1.0) * math.fsum(rates[:k]) / full


def ceiling_rate(k: int, step_s: float) -> float:
    """Per-user decode rate at perfect acceptance: (k + 1) / step time."""
    return (k + 1) / step_s


def _eliminate(a: list[list[Fraction]], cols: int) -> list[list[Fraction]]:
    """Gauss-Jordan elimination in place on the first `cols` columns; the rows with a pivot,
    in order (exact, so a zero pivot is a true zero)."""
    pivots = 0
    for col in range(cols):
        row = next((r for r in range(pivots, len(a)) if a[r][col] != 0), None)
        if row is None:
            continue
        a[pivots], a[row] = a[row], a[pivots]
        head = a[pivots]
        head[:] = [v / head[col] for v in head]
        for r in range(len(a)):
            if r != pivots and a[r][col] != 0:
                f = a[r][col]
                a[r] = [v - f * h for v, h in zip(a[r], head, strict=True)]
        pivots += 1
    return a[:pivots]


def rank(rows: list[list[float]]) -> int:
    """The exact rank of a matrix of floats."""
    return len(_eliminate([[Fraction(v) for v in row] for row in rows],
                          len(rows[0]) if rows else 0))


def _scaled(column: list[float]) -> tuple[list[int], int]:
    """A column of floats as integers over one power of two, exactly."""
    ratios = [float(v).as_integer_ratio() for v in column]
    scale = max(d for _, d in ratios)
    return [n * (scale // d) for n, d in ratios], scale


def _solve(a: list[list[int]]) -> list[Fraction] | None:
    """x with a[:, :n] x = a[:, n] for an n x (n + 1) integer matrix, exactly: fraction-free
    (Bareiss) elimination, then back substitution; None where the system is singular."""
    n, prev = len(a), 1
    for k in range(n):
        p = next((r for r in range(k, n) if a[r][k]), None)
        if p is None:
            return None
        a[k], a[p] = a[p], a[k]
        for i in range(k + 1, n):  # every division is exact (Bareiss)
            a[i] = [(a[i][j] * a[k][k] - a[i][k] * a[k][j]) // prev for j in range(n + 1)]
        prev = a[k][k]
    x = [Fraction(0)] * n
    for i in reversed(range(n)):
        x[i] = (a[i][n] - sum(a[i][j] * x[j] for j in range(i + 1, n))) / Fraction(a[i][i])
    return x


def least_squares(rows: list[list[float]], y: list[float]) -> list[float]:
    """The least-squares coefficients of y on the columns of `rows`, solved exactly and rounded
    once: the same floats on every machine. Each column is integers over a power of two, so
    the normal equations are integers, solved without rounding."""
    n = len(rows[0])
    cols = [_scaled([r[j] for r in rows]) for j in range(n)] + [_scaled(y)]
    normal = [[sum(a * b for a, b in zip(cols[i][0], cols[j][0], strict=True))
               for j in range(n + 1)] for i in range(n)]
    scaled = _solve(normal)  # coefficients of the integer columns against the integer y
    if scaled is None:
        raise KneeError(f"least squares: {n} terms but the points pin down only {rank(rows)}")
    return [float(v * cols[j][1] / cols[n][1]) for j, v in enumerate(scaled)]


def predict(coef: tuple[float, ...] | list[float], row: list[float]) -> float:
    """sum(coef * row), exactly rounded (math.fsum: no order of additions to depend on)."""
    return math.fsum(a * b for a, b in zip(coef, row, strict=True))


@dataclass(frozen=True)
class StepModel:
    """step(c, k) in seconds, linear in 1, c, k and c*k, fitted by least squares."""

    coef: tuple[float, ...]
    rms_rel_error: float
    max_rel_error: float
    n: int

    def __call__(self, c: float, k: float) -> float:
        return predict(self.coef, design(c, k))


def design(c: float, k: float) -> list[float]:
    return [1.0, float(c), float(k), float(c) * float(k)]


def identifiable(points: list[tuple[float, float]]) -> bool:
    """Whether the measured (c, k) points pin down every term of the step model, with one
    point to spare (else its fit error is zero by construction and says nothing)."""
    unique = sorted(set(points))
    return len(unique) > len(STEP_TERMS) and \
        rank([design(c, k) for c, k in unique]) == len(STEP_TERMS)


def fit_step_model(obs: list[tuple[float, float, float]]) -> StepModel:
    """Least squares over (c, k, step seconds) observations; the fit error is relative."""
    x = [design(c, k) for c, k, _ in obs]
    coef = tuple(least_squares(x, [s for _, _, s in obs]))
    rel = [(predict(coef, row) - s) / s for row, (_, _, s) in zip(x, obs, strict=True)]
    return StepModel(coef, math.sqrt(math.fsum(r * r for r in rel) / len(rel)),
                     max(abs(r) for r in rel), len(obs))


def sse(coef: list[float], rows: list[list[float]], y: list[float]) -> float:
    """The squared error of a fit, exactly rounded."""
    return math.fsum((predict(coef, row) - v) ** 2 for row, v in zip(rows, y, strict=True))


def hinge_fit(x: list[float], y: list[float], at: float) -> tuple[list[float], float]:
    """Continuous two-segment line with its break at `at`: coefficients and SSE."""
    m = [[1.0, v, max(0.0, v - at)] for v in x]
    coef = least_squares(m, y)
    return coef, sse(coef, m, y)


def throughput_knee(conc: list[int], thr: list[float], grid: int = 200) -> ThroughputKnee:
    """The concurrency past which throughput stops rising: a continuous two-segment fit, its
    break searched between the second and the second-to-last point (each segment keeps two
    points). Accepted only when the slope after the break is at most KNEE_SLOPE_RATIO of the
    slope before and two segments leave at most KNEE_SSE_RATIO of one line's squared error;
    otherwise no knee in the measured range, with the reason; with the throughput per
    concurrency it was fitted to."""
    x, y = [float(v) for v in conc], [float(v) for v in thr]
    if len(x) < 4:
        return {"concurrency": conc, "throughput": thr, "knee": None,
                "reason": f"{len(x)} concurrency points: a two-segment fit needs 4"}
    rows = [[1.0, v] for v in x]
    sse_line = sse(least_squares(rows, y), rows, y)
    best, step = None, (x[-2] - x[1]) / (grid - 1)
    for i in range(grid):
        at = x[-2] if i == grid - 1 else i * step + x[1]  # numpy.linspace's grid, exactly
        coef, err = hinge_fit(x, y, at)
        if best is None or err < best[2]:
            best = (at, coef, err)
    assert best is not None  # grid > 0
    at, coef, err = best
    before, after = coef[1], coef[1] + coef[2]
    out: ThroughputKnee = {"concurrency": conc, "throughput": thr, "knee": None, "reason": None,
                           "break": at, "slope_before": before, "slope_after": after,
                           "sse_ratio": err / sse_line if sse_line > 0 else 0.0}
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
