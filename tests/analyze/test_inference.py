"""Inference proven on simulations of known truth: coverage of the interval over boot pairs,
false verdict rates of the bar's rules, and the failure of an interval over requests."""

import math

import numpy as np
import pytest

from knee.analyze import bar, inference
from knee.plan import stopping

# Between-boot spread like the embedded engine's (the published run's control boots differ by
# about 17 % at every concurrency: a log-scale SD near 0.12); request noise inside a boot of
# 8 %, a point's figure the p50 of 8 requests.
BOOT_SD = 0.12
REQUEST_SD = 0.08
REQUESTS = 8


def figures(rng, n_pairs, effect, boot_sd=BOOT_SD):
    """Per-pair (control, candidate) figures: a boot-level speed factor for every boot, the
    p50 of its requests, the candidate's true effect as a ratio."""
    out = []
    for _ in range(n_pairs):
        boots = rng.normal(0.0, boot_sd, size=2)
        reqs = rng.normal(0.0, REQUEST_SD, size=(2, REQUESTS))
        c, d = np.exp(np.median(boots[:, None] + reqs, axis=1))
        out.append((100.0 * c, 100.0 * d * (1 + effect / 100.0)))
    return out


def rows(pairs, point=8):
    return [{"pair": p, "instrument": "sweep", "point": point, "metric": "throughput",
             "control": c, "candidate": d, "delta_pct": 100.0 * (d - c) / c}
            for p, (c, d) in enumerate(pairs, start=1)]


def verdict(pairs, rule, alpha=0.05):
    comp = {"experiment": "sim", "verdict": "VALID", "rows": rows(pairs)}
    return bar.judge(comp, {"alpha": alpha, "rules": [rule]}, len(pairs), "h", {"h"})["verdict"]


@pytest.mark.parametrize("n_pairs", [2, 3, 5])
def test_interval_over_pairs_covers_zero_in_aa_experiments(n_pairs):
    rng = np.random.default_rng(n_pairs)
    trials = 2000
    covered = 0
    for _ in range(trials):
        pairs = figures(rng, n_pairs, 0.0)
        eff = inference.effect([inference.log_ratio(c, d) for c, d in pairs])
        lo, hi = eff.interval_pct(0.95)
        covered += lo <= 0.0 <= hi
    assert 0.93 <= covered / trials <= 0.97


def test_interval_over_requests_is_far_too_narrow_for_aa_experiments():
    """The old per-request bootstrap's failure, reproduced: inside one boot pair the interval
    sees only request noise, so two identical servers look different most of the time."""
    rng = np.random.default_rng(7)
    trials, excluded = 400, 0
    for _ in range(trials):
        boots = rng.normal(0.0, BOOT_SD, size=2)
        reqs = np.exp(boots[:, None] + rng.normal(0.0, REQUEST_SD, size=(2, REQUESTS)))
        resampled = np.median(reqs[:, rng.integers(0, REQUESTS, size=(500, REQUESTS))], axis=2)
        deltas = 100.0 * (resampled[1] - resampled[0]) / resampled[0]
        lo, hi = np.percentile(deltas, [2.5, 97.5])
        excluded += not lo <= 0.0 <= hi
    assert excluded / trials > 0.3


PARITY = {"name": "parity", "instrument": "sweep", "metric": "throughput", "point": 8,
          "within_pct": 5}
GAIN = {"name": "gain", "instrument": "sweep", "metric": "throughput", "point": 8,
        "min_gain_pct": 15}


def rate(rng, trials, n_pairs, effect, rule, wanted, boot_sd):
    hits = sum(verdict(figures(rng, n_pairs, effect, boot_sd), rule) == wanted
               for _ in range(trials))
    return hits / trials


def at_most(alpha, trials):
    """A simulated rate whose true value is at most alpha stays under this (3 standard errors
    of a binomial at alpha: a true rate above alpha by that much fails the test)."""
    return alpha + 3 * math.sqrt(alpha * (1 - alpha) / trials)


def test_parity_at_its_margin_passes_at_most_alpha():
    # a spread small enough that parity can pass at all: 10 pairs, 3 % between boots
    rng = np.random.default_rng(11)
    assert rate(rng, 3000, 10, 5.0, PARITY, "PASS", 0.03) <= at_most(0.05, 3000)
    assert rate(rng, 3000, 10, -5.0, PARITY, "PASS", 0.03) <= at_most(0.05, 3000)
    # and the test has power: a true zero effect passes most of the time at this precision
    assert rate(rng, 500, 10, 0.0, PARITY, "PASS", 0.03) > 0.5


def test_gain_at_its_threshold_passes_or_fails_at_most_alpha_each():
    rng = np.random.default_rng(12)
    for wanted in ("PASS", "FAIL"):
        assert rate(rng, 3000, 4, 15.0, GAIN, wanted, BOOT_SD) <= at_most(0.05, 3000)


def test_a_large_true_effect_resolves_with_few_pairs():
    rng = np.random.default_rng(13)
    assert rate(rng, 300, 3, -30.0, GAIN, "FAIL", BOOT_SD) > 0.8


def test_mde_matches_the_power_it_claims():
    """A true effect one MDE beyond the threshold is resolved about 80 % of the time."""
    rng = np.random.default_rng(14)
    n, trials = 6, 1500
    probe = inference.effect([inference.log_ratio(c, d) for c, d in figures(rng, 200, 0.0)])
    eff = inference.Effect(n, 0.0, probe.sd)
    mde = inference.mde_pct(eff, 0.05)
    effect = 100.0 * math.expm1(math.log1p(GAIN["min_gain_pct"] / 100.0) + math.log1p(mde / 100))
    power = rate(rng, trials, n, effect, GAIN, "PASS", BOOT_SD)
    assert 0.7 <= power <= 0.9


def sequential(rng, effect, rule, pairs_cfg, boot_sd=BOOT_SD, looks=None):
    """One run that stops by precision: add pairs, look after each from min on."""
    lo, hi = stopping.bounds(pairs_cfg)
    looks = stopping.looks(pairs_cfg) if looks is None else looks
    pairs = figures(rng, hi, effect, boot_sd)
    for n in range(lo, hi + 1):
        comp = {"experiment": "sim", "verdict": "VALID", "rows": rows(pairs[:n])}
        judged = bar.judge(comp, {"alpha": 0.05, "rules": [rule]}, n, "h", {"h"}, looks=looks)
        if stopping.decision(judged, n, pairs_cfg)["stop"]:
            return judged["verdict"], n
    raise AssertionError("the run did not stop at max")


def test_stopping_by_precision_keeps_false_verdicts_at_alpha():
    """At the threshold every PASS or FAIL is false; spending alpha over the looks keeps each
    at alpha or below over the whole run, wherever it stopped."""
    cfg = {"min": 2, "max": 6}
    rng = np.random.default_rng(21)
    trials = 2000
    runs = [sequential(rng, 15.0, GAIN, cfg) for _ in range(trials)]
    for wanted in ("PASS", "FAIL"):
        assert sum(v == wanted for v, _ in runs) / trials <= at_most(0.05, trials)
    assert {n for _, n in runs} >= {2, 6}  # it does stop early, and it does run to max


def test_stopping_without_spending_alpha_inflates_false_verdicts():
    """The same looks at the full alpha each: the false PASS rate exceeds alpha."""
    cfg = {"min": 2, "max": 6}
    rng = np.random.default_rng(22)
    trials = 2000
    runs = [sequential(rng, 15.0, GAIN, cfg, looks=1) for _ in range(trials)]
    assert sum(v == "PASS" for v, _ in runs) / trials > at_most(0.05, trials)


def test_stopping_by_precision_stops_early_on_a_large_effect():
    rng = np.random.default_rng(23)
    runs = [sequential(rng, -30.0, GAIN, {"min": 2, "max": 6}) for _ in range(200)]
    assert sum(v == "FAIL" for v, _ in runs) / 200 > 0.9
    assert np.median([n for _, n in runs]) < 6
