"""Robustness beside every verdict: whether another reasonable reading of the same pairs
decides otherwise (pure).

A rule's verdict is decided, as registered, on the Student t interval over the pairs' effects
(adjusted where the bar adjusts). Beside it, on the same effects and at the same level:
- leave one pair out: the rule judged again without each pair in turn (from three pairs);
- a rank interval: the Hodges-Lehmann estimate with the Wilcoxon signed-rank interval (exact,
  from five pairs at a 90 % level), which no single wild pair moves far;
- where the pairs ran on several hosts: the t interval over the hosts' mean effects (pairs
  split across two hosts left out), since pairs on one host share its state;
- where the arms swap sets between pairs (simultaneous and interleaved orders; in interleaved
  order set 2's engine boots once set 1's has): the crossover reading, the effects fitted with
  the set the candidate had as a second term (from four pairs, both sets among them), since a
  set worth something to either arm cancels from the mean only where the pairs balance it.
A verdict that any of them decides otherwise is *fragile*: it rests on one pair, on the shape
of the spread, or on treating the pairs of one host as independent. Robustness decides nothing;
the README says where a verdict is fragile and why.

The bar FAILs when any rule fails: with R rules, each a one-sided test at alpha, the chance that
an experiment with no effect beyond any threshold FAILs by chance is at most R x alpha
(Bonferroni); PASS needs every rule to pass, so its error stays at alpha.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from knee.analyze import inference
from knee.analyze.stats import fmean
from knee.core.records import BarRule
from knee.core.records.verdict import (
    Dropped,
    Family,
    OverHosts,
    OverSets,
    RankVerdict,
    Robustness,
    TVerdict,
)


@lru_cache(maxsize=256)
def signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(T+ <= t), t = 0 .. n(n+1)/2, for the Wilcoxon signed-rank statistic of n pairs with
    no effect (exact: each rank's sign is a fair coin)."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for rank in range(1, n + 1):
        for t in range(len(counts) - 1, rank - 1, -1):
            counts[t] += counts[t - rank]
    total, run, out = 2 ** n, 0, []
    for c in counts:
        run += c
        out.append(run / total)
    return tuple(out)


def rank_interval(effects: Sequence[float],
                  level: float) -> tuple[float, tuple[float, float] | None]:
    """Hodges-Lehmann estimate (median of the Walsh averages) and the exact signed-rank
    interval at `level` (log scale); no interval where the pairs are too few for that level."""
    walsh = sorted((a + b) / 2 for i, a in enumerate(effects) for b in effects[i:])
    m = len(walsh)
    estimate = (walsh[(m - 1) // 2] + walsh[m // 2]) / 2
    cdf = signed_rank_cdf(len(effects))
    tail = (1 - level) / 2
    c = max((t for t, p in enumerate(cdf) if p <= tail), default=None)
    if c is None:
        return estimate, None
    return estimate, (walsh[c], walsh[m - 1 - c])


def t_verdict(rule: BarRule, effects: Sequence[float],
              level: float) -> TVerdict | None:
    eff = inference.effect(effects)
    if eff is None or eff.n < 2:
        return None
    return {"verdict": inference.decide(rule, eff.bounds(level)),
            "estimate": inference.to_pct(eff.mean), "interval": eff.interval_pct(level)}


def leave_one_out(rule: BarRule, pairs: Sequence[int], effects: Sequence[float],
                  level: float) -> list[Dropped] | None:
    """The rule without each pair in turn (None with fewer than three pairs)."""
    if len(effects) < 3:
        return None
    out: list[Dropped] = []
    for i, pair in enumerate(pairs):
        judged = t_verdict(rule, [e for j, e in enumerate(effects) if j != i], level)
        assert judged is not None
        out.append(Dropped(pair=pair, **judged))
    return out


def by_host(rule: BarRule, pairs: Sequence[int], effects: Sequence[float],
            hosts_of: Mapping[int, list[str]], level: float) -> OverHosts | None:
    """The t interval over the hosts' mean effects (None on one host, or one left)."""
    means: dict[str, list[float]] = {}
    for pair, e in zip(pairs, effects, strict=True):
        if len(hosts_of.get(pair) or []) == 1:
            means.setdefault(hosts_of[pair][0], []).append(e)
    if len(means) < 2:
        return None
    judged = t_verdict(rule, [fmean(v) for v in means.values()], level)
    return None if judged is None else OverHosts(hosts=len(means), **judged)


class SetFit(NamedTuple):
    """The effects fitted on a mean and the candidate's set: each term with its half-width."""

    mean: float
    mean_half: float
    set_term: float
    set_half: float


def set_fit(effects: Sequence[float], signs: Sequence[float], level: float) -> SetFit | None:
    """Least squares of the effects on a mean and the candidate's set (signs: +1 set 2, -1 set
    1), each term's t half-width at `level` with n - 2 degrees of freedom; the set term is the
    set-2 arm against the set-1 arm, in the effects' own units. None under four effects, or
    with one set for the candidate."""
    n = len(effects)
    if n < 4 or len(set(signs)) < 2:
        return None
    s_bar, e_bar = fmean(signs), fmean(effects)
    sxx = math.fsum((x - s_bar) ** 2 for x in signs)
    slope = math.fsum((x - s_bar) * (e - e_bar) for x, e in zip(signs, effects, strict=True)) / sxx
    mean = e_bar - slope * s_bar
    rss = math.fsum((e - mean - slope * x) ** 2 for x, e in zip(signs, effects, strict=True))
    t = inference.t_quantile((1 + level) / 2, n - 2) * math.sqrt(rss / (n - 2))
    return SetFit(mean, t * math.sqrt(1 / n + s_bar ** 2 / sxx), slope, t / math.sqrt(sxx))


def by_set(rule: BarRule, pairs: Sequence[int], effects: Sequence[float],
           sets_of: Mapping[int, int], level: float) -> OverSets | None:
    """The effects' set_fit: its mean judged on its t interval, and the set term (None under
    four pairs, or with one set for the candidate)."""
    fit = set_fit(effects, [1.0 if sets_of.get(p) == 2 else -1.0 for p in pairs], level)
    if fit is None:
        return None
    bounds = (fit.mean - fit.mean_half, fit.mean + fit.mean_half)
    return {"verdict": inference.decide(rule, bounds), "estimate": inference.to_pct(fit.mean),
            "interval": [inference.to_pct(b) for b in bounds],
            "set_effect": inference.to_pct(fit.set_term),
            "set_interval": [inference.to_pct(fit.set_term - fit.set_half),
                             inference.to_pct(fit.set_term + fit.set_half)]}


def section(rule: BarRule, verdict: Mapping[str, Any], effects: Sequence[float],
            hosts_of: Mapping[int, list[str]], level: float,
            sets_of: Mapping[int, int] | None = None) -> Robustness:
    """bar.json's robustness of one judged rule, on the effects its verdict used; by_set only
    where the arms swap sets between pairs (sets_of: the candidate's set of each pair)."""
    pairs = [p["pair"] for p in verdict["per_pair"]]
    estimate, bounds = rank_interval(effects, level)
    rank: RankVerdict = {"estimate": inference.to_pct(estimate),
            "interval": [inference.to_pct(b) for b in bounds] if bounds else None,
            "verdict": inference.decide(rule, bounds) if bounds else None}
    drops = leave_one_out(rule, pairs, effects, level)
    hosts = by_host(rule, pairs, effects, hosts_of, level)
    registered = verdict["verdict"]
    why = [f"without pair {d['pair']}: {d['verdict']}" for d in drops or []
           if d["verdict"] != registered]
    if rank["verdict"] and rank["verdict"] != registered:
        why.append(f"rank interval: {rank['verdict']}")
    if hosts and hosts["verdict"] != registered:
        why.append(f"over the {hosts['hosts']} hosts' means: {hosts['verdict']}")
    sets = by_set(rule, pairs, effects, sets_of, level) if sets_of else None
    if sets and sets["verdict"] != registered:
        why.append(f"with the arms' sets as a term: {sets['verdict']}")
    out: Robustness = {"leave_one_out": drops, "rank": rank, "by_host": hosts,
                       "fragile": bool(why), "why": why}
    return {**out, "by_set": sets} if sets_of else out


def family(rules: Sequence[Mapping[str, Any]], alpha: float) -> Family:
    """What the bar's combination of its rules does to its error rates."""
    n = len(rules)
    return {"rules": n, "fail_error_at_most": min(1.0, n * alpha), "pass_error_at_most": alpha,
            "statement": (f"The bar FAILs when any of its {n} rules fails: the chance of a FAIL "
                          f"by chance alone is at most {n} x {alpha:g} = "
                          f"{min(1.0, n * alpha):.0%} (Bonferroni); it PASSes only when every "
                          f"rule passes, at most {alpha:.0%} by chance."
                          if n > 1 else f"One rule, one-sided at alpha {alpha:g}.")}
