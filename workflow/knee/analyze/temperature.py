"""The temperature a sampler drew at, estimated from what a boot's sampling check recorded: at
each position the model's 20 likeliest tokens with their raw log-probabilities, and the sampled
token's.

Sampling at temperature T from the model's distribution p draws from q ~ p^(1/T), cut to the
top_k likeliest and then to the nucleus of q holding top_p of its mass. Conditional on landing in
a set S of tokens that the cut keeps, the draw follows p^(1/T) restricted to S, whatever the
rest of the vocabulary holds. So each position gives a conditional likelihood of beta = 1/T on
its set S (the 20 likeliest, or fewer where top_k or top_p cuts inside them), and their product
is maximised: the conditional MLE beta_hat, its standard error from the Fisher information,
and T_hat = 1/beta_hat with SE(T_hat) = SE(beta_hat) / beta_hat^2.

A token sampled where the cut cannot keep it (ranked past top_k, or past every nucleus that the
unseen rest of the vocabulary allows) is a violation: no correct sampler draws it. Pure
functions, numpy arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from knee.core.records.sampling import SampledRequest

TOP = 20
SLACK = 0.01  # probability mass: a nucleus edge this close decides no violation and no set
MATCH = 1e-4  # relative: the sampled token's log-probability found among the 20 likeliest
BETA_RANGE = (math.log(1e-3), math.log(1e3))  # T_hat between 0.001 and 1000


@dataclass(frozen=True)
class Cut:
    """What the sampler was asked to cut to: top_k (-1: none) and top_p (1.0: none)."""

    top_k: int = -1
    top_p: float = 1.0

    def inside(self) -> bool:
        """Whether top_k cuts within the 20 likeliest (the rest of the vocabulary then weighs
        nothing, and a token outside them is never drawn)."""
        return 1 <= self.top_k <= TOP

    def kept(self) -> int:
        """How many of the 20 likeliest top_k keeps."""
        return self.top_k if self.inside() else TOP


NO_CUT = Cut()


@dataclass(frozen=True)
class Estimate:
    """T_hat with its standard error (None where no position informs it), the positions that
    did, and the sampled tokens no correct sampler would draw."""

    t_hat: float | None
    t_se: float | None
    positions: int
    violations: int


def rank(sampled: float, top: list[float], hit: bool) -> int | None:
    """The sampled token's place among the 20 likeliest (0 the likeliest), None outside."""
    if not hit:
        return None
    return next((i for i, x in enumerate(top)
                 if abs(sampled - x) <= MATCH * max(1.0, abs(x))), None)


def tail_bound(top: np.ndarray, beta: float) -> float:
    """The most the tokens outside the 20 likeliest may weigh in sum p^beta (relative to the
    likeliest's): for beta >= 1 each weighs at most p_20^(beta-1) times its p; below 1 nothing
    bounds it."""
    rest = max(0.0, 1.0 - float(np.exp(top).sum()))
    if rest == 0.0:
        return 0.0
    if beta < 1.0:
        return math.inf
    return rest * math.exp((beta - 1.0) * top[-1] - beta * top[0])


def nucleus(top: np.ndarray, beta: float, cut: Cut) -> tuple[int, int | None]:
    """(how many of the 20 likeliest every admissible nucleus keeps, how many any admissible
    nucleus may keep at most, None if it may reach past the 20) at this position."""
    kept = top[:cut.kept()]
    w = np.exp(beta * (kept - kept[0]))
    if cut.top_p >= 1.0:
        return len(kept), len(kept) if cut.inside() else None
    rest = 0.0 if cut.inside() else tail_bound(top, beta)
    before = np.concatenate(([0.0], np.cumsum(w)[:-1]))  # the mass ranked above each token
    low = int(np.sum(before / w.sum() < cut.top_p - SLACK))  # the rest weighing nothing
    if math.isinf(rest):
        return max(low, 1), None
    high = int(np.sum(before / (w.sum() + rest) < cut.top_p + SLACK))
    return max(low, 1), (high if high < len(kept) or cut.inside() else None)


def positions(records: list[SampledRequest], beta: float, cut: Cut
              ) -> tuple[np.ndarray, np.ndarray, int]:
    """(the sets' log-probabilities, -inf padded; the sampled token's place in its set; the
    violations) over every position whose sampled token lies in a set of two or more."""
    rows, picks, bad = [], [], 0
    for r in records:
        for sampled, top, hit in zip(r["token_logprobs"], r["top_logprobs"], r["in_top"],
                                     strict=True):
            if not top:
                continue
            arr = np.asarray(top, dtype=float)
            low, high = nucleus(arr, beta, cut)
            at = rank(sampled, top, hit)
            if (at is None and high is not None) or (at is not None and high is not None
                                                      and at >= high):
                bad += 1
                continue
            if at is not None and at < low and low >= 2:
                rows.append(top[:low] + [-math.inf] * (TOP - low))
                picks.append(at)
    if not rows:
        return np.empty((0, TOP)), np.empty(0, dtype=int), bad
    return np.asarray(rows, dtype=float), np.asarray(picks), bad


def score(x: np.ndarray, picked: np.ndarray, beta: float) -> tuple[float, float]:
    """(the score in beta, the Fisher information) of the conditional likelihood."""
    z = beta * (x - x[:, :1])
    w = np.exp(z)
    w /= w.sum(axis=1, keepdims=True)
    xs = np.where(np.isfinite(x), x, 0.0)
    mean = (w * xs).sum(axis=1)
    var = (w * (xs - mean[:, None]) ** 2).sum(axis=1)
    return float((picked - mean).sum()), float(var.sum())


def estimate(records: list[SampledRequest], temperature: float, cut: Cut = NO_CUT) -> Estimate:
    """The conditional MLE of the temperature from a check's records, the sets taken as the
    sampler asked for `temperature` would cut (under that hypothesis the estimate is exact)."""
    x, at, bad = positions(records, 1.0 / temperature, cut)
    if not len(at):
        return Estimate(None, None, 0, bad)
    picked = x[np.arange(len(at)), at]
    lo, hi = BETA_RANGE
    if score(x, picked, math.exp(hi))[0] >= 0:  # likelier than any temperature: greedy
        return Estimate(0.0, 0.0, len(at), bad)
    if score(x, picked, math.exp(lo))[0] < 0:
        return Estimate(math.inf, math.inf, len(at), bad)
    beta = 1.0 / temperature
    for _ in range(200):  # Newton's steps in beta, kept inside the bracket by bisection
        u, info = score(x, picked, beta)
        lo, hi = (math.log(beta), hi) if u > 0 else (lo, math.log(beta))
        step = beta + u / info if info > 0 else 0.0
        inside = math.exp(lo) <= step <= math.exp(hi)
        if (inside and abs(step - beta) <= 1e-12 * beta) or hi - lo < 1e-12:
            break
        beta = step if inside else math.exp((lo + hi) / 2)
    info = score(x, picked, beta)[1]
    if info <= 0:  # every weight on one token: as greedy as the range reaches
        return Estimate(0.0, 0.0, len(at), bad)
    return Estimate(1.0 / beta, 1.0 / math.sqrt(info) / beta ** 2, len(at), bad)
