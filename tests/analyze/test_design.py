"""The planner keeps its promise: a protocol planned from the upper confidence bound of a
calibration's noise reaches its target MDE at the true noise about LEVEL of the time, where one
planned from the noise as estimated reaches it about half the time (simulated, known truth)."""

import math
import random

import pytest

from knee.analyze import inference
from knee.analyze.adjust import design

TARGET, ALPHA = 1.5, 0.05


def figure(cv_pct: float, boots: int, groups: int) -> dict:
    return {"instrument": "fixture", "metric": "decode_rate_p50", "point": "all",
            "boots": boots, "groups": groups,
            "left_out": {"adjusted_cv_pct": cv_pct, "unadjusted_cv_pct": cv_pct}}


def planned_pairs(f: dict, bound: bool) -> int | None:
    return next((n for n in range(2, design.MAX_PAIRS + 1)
                 if (design.predicted_mde(f, n, 1, ALPHA, bound=bound) or 99) <= TARGET), None)


def true_mde(pairs: int, cv_pct: float) -> float:
    return inference.mde_pct(inference.Effect(pairs, 0.0, math.sqrt(2) * cv_pct / 100), ALPHA)


@pytest.mark.parametrize("boots,groups,truth", [(22, 5, 1.4), (8, 2, 0.8)])
def test_a_protocol_planned_from_the_upper_bound_reaches_its_target_as_promised(
        boots, groups, truth):
    """truth: the between-boot CV (%), small enough that MAX_PAIRS seldom binds"""
    rng = random.Random(7)
    df = boots - groups - 1
    planned, reached = {True: 0, False: 0}, {True: 0, False: 0}
    for _ in range(2000):
        estimate = truth * math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(df)) / df)
        f = figure(estimate, boots, groups)
        for bound in (True, False):
            # None: no protocol up to MAX_PAIRS reaches it, which the planner says
            if (pairs := planned_pairs(f, bound)) is not None:
                planned[bound] += 1
                reached[bound] += true_mde(pairs, truth) <= TARGET
    assert planned[True] > 1900 and reached[True] / planned[True] >= design.LEVEL - 0.02, \
        (planned, reached)
    assert reached[False] / planned[False] <= 0.65, (planned, reached)


def test_the_bound_is_the_chi_square_bound_and_the_range_runs_from_estimate_to_bound():
    f = figure(1.0, 22, 5)
    assert design.noise_df(f) == 16 and design.noise_df(f, adjusted=False) == 17
    # chi2(16) at 0.10 is 9.312: the SD may be sqrt(16 / 9.312) = 1.311 times the estimate
    assert design.upper_factor(f) == pytest.approx(1.3108, abs=1e-4)
    low, high = design.predicted_range(f, 10, 1, ALPHA)
    assert low == pytest.approx(true_mde(10, 1.0), abs=0.01)
    assert high == pytest.approx(true_mde(10, 1.0 * design.upper_factor(f)), abs=0.01)
    # fewer boots, a wider range
    narrow, wide = (design.predicted_range(figure(1.0, b, 2), 10, 1, ALPHA) for b in (30, 6))
    assert wide[1] - wide[0] > 3 * (narrow[1] - narrow[0])
