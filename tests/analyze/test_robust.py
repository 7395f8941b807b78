"""Robustness beside every verdict: the rank interval is the exact Wilcoxon one, a verdict that
one pair, a rank reading or the hosts' means would decide otherwise is fragile, and the bar says
what combining its rules does to its error rates."""

import math
import random

from scipy import stats

from knee.analyze import inference, robust

PARITY = {"name": "single-stream parity", "within_pct": 1.5}


def test_the_signed_rank_distribution_is_the_exact_one():
    cdf = robust.signed_rank_cdf(5)
    assert cdf[0] == 1 / 32 and cdf[-1] == 1.0 and len(cdf) == 16
    for t in (3, 9, 17):  # every sign pattern of 8 ranks, counted
        count = sum(1 for mask in range(2 ** 8)
                    if sum(r for r in range(1, 9) if mask >> (r - 1) & 1) <= t)
        assert math.isclose(robust.signed_rank_cdf(8)[t], count / 2 ** 8, rel_tol=1e-12)
    # scipy's exact one-sided p-value of a sample whose positive ranks sum to 3
    sample = [-8, -7, -6, -5, -4, 3, -2, -1]
    assert math.isclose(stats.wilcoxon(sample, alternative="less", method="exact").pvalue,
                        robust.signed_rank_cdf(8)[3], rel_tol=1e-9)


def test_the_rank_interval_covers_at_its_level_and_needs_five_pairs_at_90_percent():
    assert robust.rank_interval([0.01, 0.02, 0.03, 0.04], 0.90)[1] is None
    estimate, bounds = robust.rank_interval([0.01, 0.02, 0.03, 0.04, 0.05], 0.90)
    assert math.isclose(estimate, 0.03) and bounds == (0.01, 0.05)
    rng = random.Random(7)
    covered = 0
    for _ in range(2000):
        xs = [rng.gauss(0.01, 0.02) for _ in range(10)]
        lo, hi = robust.rank_interval(xs, 0.90)[1]
        covered += lo <= 0.01 <= hi
    assert 0.88 <= covered / 2000 <= 0.94  # exact: at least 90 %, a little above


def verdict_of(effects, verdict):
    return {"verdict": verdict, "per_pair": [{"pair": i} for i in range(1, len(effects) + 1)]}


def test_a_verdict_one_pair_decides_is_fragile_and_says_which():
    effects = [inference.to_log(p) for p in (-2.6, -2.4, -2.5, -2.7, -2.3, -0.2)]
    judged = inference.decide(PARITY, inference.effect(effects).bounds(0.90))
    assert judged == "INCONCLUSIVE"
    steady = [inference.to_log(p) for p in (-2.6, -2.4, -2.5, -2.7, -2.3, -2.5)]
    assert inference.decide(PARITY, inference.effect(steady).bounds(0.90)) == "FAIL"
    section = robust.section(PARITY, verdict_of(steady, "FAIL"), steady, {}, 0.90)
    assert not section["fragile"] and section["rank"]["verdict"] == "FAIL"
    assert section["by_host"] is None and len(section["leave_one_out"]) == 6
    section = robust.section(PARITY, verdict_of(effects, "INCONCLUSIVE"), effects, {}, 0.90)
    assert section["fragile"] and section["why"] == ["without pair 6: FAIL"]


def test_pairs_of_one_host_are_judged_over_the_hosts_means():
    effects = [inference.to_log(p) for p in (-2.5, -2.6, -2.4, -0.5, -0.6, -0.4)]
    hosts = {1: ["a"], 2: ["a"], 3: ["a"], 4: ["b"], 5: ["b"], 6: ["b", "c"]}
    section = robust.section(PARITY, verdict_of(effects, "FAIL"), effects, hosts, 0.90)
    assert section["by_host"]["hosts"] == 2  # pair 6 ran on two hosts: left out
    assert section["by_host"]["verdict"] == "INCONCLUSIVE"
    assert "over the 2 hosts' means: INCONCLUSIVE" in section["why"] and section["fragile"]


def test_the_arms_sets_are_a_term_of_the_crossover_reading():
    """Arms that swap sets between pairs: a set-2 arm 2 % faster shows as +2 % in the pairs
    where the candidate had set 2 and -2 % in the others. The pairs' mean stays the effect,
    but they spread: the mean alone calls parity INCONCLUSIVE; with the set as a term the
    spread is gone, and the verdict, PASS, differs: fragile, and said why."""
    sets = {1: 2, 2: 1, 3: 2, 4: 1, 5: 2, 6: 1}
    noise = (0.1, -0.1, 0.05, 0.0, -0.05, 0.0)
    effects = [inference.to_log((2.0 if sets[p] == 2 else -2.0) + e)
               for p, e in zip(sets, noise, strict=True)]
    assert inference.decide(PARITY, inference.effect(effects).bounds(0.90)) == "INCONCLUSIVE"
    section = robust.section(PARITY, verdict_of(effects, "INCONCLUSIVE"), effects, {}, 0.90,
                             sets)
    by_set = section["by_set"]
    assert by_set["verdict"] == "PASS" and abs(by_set["estimate"]) < 0.1
    assert math.isclose(by_set["set_effect"], 2.0, abs_tol=0.1)
    assert by_set["set_interval"][0] > 1.5  # shown, not merely estimated
    assert section["fragile"] and "with the arms' sets as a term: PASS" in section["why"]
    # where the sets are alike, the planted nothing: an interval that holds zero as often as
    # its level says, over many simulated experiments of 6 pairs
    rng = random.Random(11)
    covered = 0
    for _ in range(2000):
        xs = [rng.gauss(0.0, 0.01) for _ in range(6)]
        lo, hi = robust.by_set(PARITY, list(sets), xs, sets, 0.90)["set_interval"]
        covered += lo <= 0.0 <= hi
    assert 0.87 <= covered / 2000 <= 0.93
    # no sets (a sequential order): no such reading, and no key
    assert "by_set" not in robust.section(PARITY, verdict_of(effects, "INCONCLUSIVE"),
                                          effects, {}, 0.90)
    assert robust.by_set(PARITY, [1, 2, 3], effects[:3], sets, 0.90) is None
    assert robust.by_set(PARITY, [1, 3, 5, 7], effects[:4], {1: 2, 3: 2, 5: 2, 7: 2},
                         0.90) is None


def test_the_bar_states_its_family_wise_error():
    three = robust.family([{}, {}, {}], 0.05)
    assert math.isclose(three["fail_error_at_most"], 0.15) and three["pass_error_at_most"] == 0.05
    assert "at most 3 x 0.05 = 15%" in three["statement"]
    assert robust.family([{}], 0.05)["statement"] == "One rule, one-sided at alpha 0.05."

