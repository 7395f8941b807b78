"""Effects with intervals at a named level, verdicts decided on intervals, pairs needed (pure).

The unit of replication is the boot pair: two boots of one config differ far more than two runs
inside one boot, so an interval that resamples requests inside a boot says nothing about the
next boot. The effect of a pair is the log ratio candidate / control of its two figures; the
effect across pairs is their mean with a Student t interval over the pairs (the interval is
exact for normal log ratios, whatever the between-boot variance, and honestly wide with few
pairs). Everything is computed on the log scale and shown as a percentage change.

Nothing else in knee computes an interval: compare, bar and the README call this module, for
the interval over boot pairs that decides and for the interval over one pair's requests that
is shown beside a pair's own delta.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypedDict

import numpy as np
from scipy import stats

from knee.analyze.stats import decode_rate, e2e, fmean, ttft
from knee.core import metrics, rulekinds
from knee.core.records import BarRule, ComparisonRow, RequestRecord

PAIRS = "boot pairs"
REQUESTS = "requests within one boot pair"
METHOD = ("The boot pair is the unit of replication. Each pair's effect is the log ratio "
          "candidate / control of the pair's two figures; the effect across pairs is the mean "
          "log ratio (a geometric mean ratio, shown as a % change) with a Student t interval "
          "over the pairs (df = pairs - 1). A per-pair row's interval resamples the requests "
          "inside that pair's two boots (2000 resamples, seeded): it leaves out boot-to-boot "
          "noise and decides nothing.")
VERDICT_METHOD = ("Each rule is a one-sided test at the bar's alpha, decided on the two-sided "
                  "(1 - 2 alpha) t interval over boot pairs: a gain rule PASSes when the lower "
                  "bound is at least the gain and FAILs when the upper bound is below it; a "
                  "parity rule PASSes when the whole interval lies inside the margin (two "
                  "one-sided tests) and FAILs when it lies wholly outside; anything else is "
                  "INCONCLUSIVE. The bar PASSes only if every rule passes and FAILs if any "
                  "rule fails. pairs_needed: the fewest pairs at which the measured mean and "
                  "between-pair spread would resolve the rule. mde_pct: the smallest effect "
                  "this run resolves from its threshold with 80 % power.")
MAX_PAIRS = 200  # pairs_needed beyond this is reported as not reachable


@lru_cache(maxsize=4096)
def t_quantile(q: float, df: int) -> float:
    return float(stats.t.ppf(q, df))


def log_ratio(control: float | None, candidate: float | None) -> float | None:
    if control is None or candidate is None or control <= 0 or candidate <= 0:
        return None
    return math.log(candidate / control)


def to_pct(x: float) -> float:
    return 100.0 * math.expm1(x)


def to_log(pct: float) -> float:
    return math.log1p(pct / 100.0)


@dataclass(frozen=True)
class Effect:
    """Per-pair log ratios summarized: their count, mean and sample standard deviation."""

    n: int
    mean: float
    sd: float | None

    def half_width(self, confidence: float, n: int | None = None) -> float | None:
        """Half-width of the two-sided t interval (log scale), at n pairs (default: these)."""
        n = self.n if n is None else n
        if n < 2 or self.sd is None:
            return None
        return t_quantile((1 + confidence) / 2, n - 1) * self.sd / math.sqrt(n)

    def bounds(self, confidence: float, n: int | None = None) -> tuple[float, float] | None:
        h = self.half_width(confidence, n)
        return None if h is None else (self.mean - h, self.mean + h)

    def interval_pct(self, confidence: float) -> list[float] | None:
        b = self.bounds(confidence)
        return None if b is None else [to_pct(b[0]), to_pct(b[1])]


def effect(ratios: Sequence[float | None]) -> Effect | None:
    """The across-pairs effect of per-pair log ratios (None where a pair has no figure)."""
    xs = [x for x in ratios if x is not None]
    if not xs:
        return None
    mean = fmean(xs)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else None
    return Effect(len(xs), mean, sd)


def margins(rule: BarRule) -> tuple[float, float] | float:
    """A parity rule's (low, high) margin or a gain rule's threshold, on the log scale."""
    kind = rulekinds.kind(rule)
    m = kind.margins(kind.value(rule))
    if isinstance(m, tuple):
        return (to_log(m[0]) if m[0] > -100 else -math.inf, to_log(m[1]))
    return to_log(m)


def decide(rule: BarRule, bounds: tuple[float, float] | None) -> str:
    """PASS, FAIL or INCONCLUSIVE for one rule from its interval (log scale)."""
    if bounds is None:
        return "INCONCLUSIVE"
    lo, hi = bounds
    m = margins(rule)
    if isinstance(m, tuple):
        if m[0] <= lo and hi <= m[1]:
            return "PASS"
        return "FAIL" if hi < m[0] or lo > m[1] else "INCONCLUSIVE"
    if lo >= m:
        return "PASS"
    return "FAIL" if hi < m else "INCONCLUSIVE"


def pairs_needed(rule: BarRule, eff: Effect, alpha: float) -> int | None:
    """The fewest pairs at which this mean and between-pair spread would resolve the rule;
    None when no number up to MAX_PAIRS would (the mean sits on a threshold) or the spread
    is unknown (one pair)."""
    if eff.sd is None:
        return None
    for n in range(max(eff.n, 2), MAX_PAIRS + 1):
        if decide(rule, eff.bounds(1 - 2 * alpha, n)) != "INCONCLUSIVE":
            return n
    return None


def mde_pct(eff: Effect, alpha: float, power: float = 0.8) -> float | None:
    """The smallest distance from a rule's threshold (as a % change) that this many pairs,
    with this spread, resolve with the given power in a one-sided test at alpha."""
    if eff.sd is None:
        return None
    df = eff.n - 1
    width = (t_quantile(1 - alpha, df) + t_quantile(power, df)) * eff.sd / math.sqrt(eff.n)
    return to_pct(width)


class FalsePositives(TypedDict):
    """How many across-pairs intervals exclude zero, of how many, at what confidence."""

    rows: int
    excluding_zero: int
    rate_pct: float | None
    confidence: float | None


def false_positives(rows: Sequence[ComparisonRow]) -> FalsePositives:
    """Across-pairs rows whose interval excludes zero: in an A/A experiment each is a false
    positive."""
    across = [r for r in rows if r["pair"] == "all" and r["interval"]]
    hits = [r for r in across if not holds_zero(r["interval"])]
    return {"rows": len(across), "excluding_zero": len(hits),
            "rate_pct": 100.0 * len(hits) / len(across) if across else None,
            "confidence": across[0]["confidence"] if across else None}


def holds_zero(interval: Sequence[float | None] | None) -> bool:
    """Whether an interval holds zero (one without both bounds cannot exclude it)."""
    lo, hi = interval or (None, None)
    return lo is None or hi is None or lo <= 0 <= hi


def request_rate(rec: Mapping[str, Any]) -> float | None:
    """Output tokens over the request's own send-to-done time."""
    span = e2e(rec)
    return rec["output_tokens"] / span if span and span > 0 else None


# the figures of a request and the statistics over a window's requests that knee.core.metrics
# names: metric -> (a request's figure, the statistic) for a within-pair interval to resample
REQUEST_FIGURES: dict[str, Callable[[Mapping[str, Any]], float | None]] = {
    "decode_rate": decode_rate, "ttft": ttft, "request_rate": request_rate}
# Each statistic over the last axis of its values (one window's requests, or each bootstrap
# resample's), the same to the last bit on every CPU: numpy's sums, logs and exponentials group
# and round by the width of the CPU's vector units, so a published interval re-rendered on
# another machine would differ in its last digits. Sums here run in order (a cumulative sum),
# logs and exponentials through the C library one value at a time.
def in_order_mean(values: Any) -> Any:
    v = np.asarray(values, dtype=float)
    return np.cumsum(v, axis=-1)[..., -1] / v.shape[-1]


def by_value(fn: Callable[[float], float], values: Any) -> Any:
    v = np.asarray(values, dtype=float)
    return np.array([fn(float(x)) for x in v.ravel()]).reshape(v.shape)


@dataclass(frozen=True)
class Statistic:
    """A statistic over a window's requests: `reduce` over the last axis, on the values' logs
    and back where `logs` (the geometric mean)."""
    reduce: Callable[[Any], Any]
    logs: bool = False

    def __call__(self, values: Any, index: Any = None) -> Any:
        """Over the values, or over each resample `values[index]` (a row of indices each): a
        value's log is taken once, however often the resamples draw it."""
        v = by_value(math.log, values) if self.logs else np.asarray(values, dtype=float)
        out = self.reduce(v if index is None else v[index])
        return by_value(math.exp, out) if self.logs else out


STATISTICS: dict[str, Statistic] = {
    "p50": Statistic(lambda v: np.median(v, axis=-1)),
    "mean": Statistic(in_order_mean),
    "gmean": Statistic(in_order_mean, logs=True)}
PER_REQUEST = {m.name: (REQUEST_FIGURES[m.request], STATISTICS[m.statistic])
               for m in metrics.METRICS}


def within_pair_interval(control: Sequence[RequestRecord], candidate: Sequence[RequestRecord],
                         metric: str,
                         seed: int, n: int = 2000, centre: float | None = None,
                         confidence: float = 0.95) -> list[float] | None:
    """Interval of the delta % inside one boot pair, resampling requests of each arm with
    replacement (seeded). It leaves out boot-to-boot noise: it describes one pair only.

    With `centre` (the aggregate throughput delta, which is not a per-request statistic) the
    interval is the bootstrap spread of the per-request statistic's delta moved onto it."""
    if metric not in PER_REQUEST:
        return None
    fn, stat = PER_REQUEST[metric]
    a = [v for v in map(fn, control) if v is not None]
    b = [v for v in map(fn, candidate) if v is not None]
    if len(a) < 2 or len(b) < 2:
        return None
    rng = np.random.default_rng(seed)
    va, vb = np.asarray(a), np.asarray(b)
    ma = stat(va, rng.integers(0, len(va), size=(n, len(va))))
    mb = stat(vb, rng.integers(0, len(vb), size=(n, len(vb))))
    deltas = 100.0 * (mb - ma) / ma
    tail = 50.0 * (1 - confidence)
    lo, hi = np.percentile(deltas[np.isfinite(deltas)], [tail, 100.0 - tail])
    if centre is not None:
        own = 100.0 * (stat(vb) - stat(va)) / stat(va)
        lo, hi = lo - own + centre, hi - own + centre
    return [float(lo), float(hi)]
