"""The agreement bench's verdicts: engine drift is told apart from a client that loses streams."""

import importlib.util
import random

import pytest

from tests.helpers import ROOT

SPEC = importlib.util.spec_from_file_location("agreement", ROOT / "bench" / "agreement.py")
agreement = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(agreement)


def runs(n: int, seed: int) -> list[dict]:
    """Runs on an engine whose speed drifts by ±10 % from run to run."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        itl = 10.0 * (1 + rng.uniform(-0.1, 0.1))
        out.append({"itl_ms": itl, "tokens_per_step": 4.0, "idle_ms": 12.0, "failed": 0,
                    "throughput": 4 * 4.0 / itl * 1000})  # 4 streams always decoding
    return out


def test_engine_drift_is_not_blamed_on_the_clients():
    row, verdict = agreement.point(4, 32, runs(12, 1), runs(12, 2), "vllm")
    assert "throughput NOT within 3 %" in verdict
    assert "streams kept decoding within 3 % (-0.00 %, -0.00 .. +0.00)" in verdict
    assert row.startswith("   4        32")


def test_a_client_that_leaves_streams_idle_is_caught():
    k = runs(12, 1)
    v = [dict(x, throughput=x["throughput"] * 0.95) for x in k]  # same engine, 5 % less fed
    _, verdict = agreement.point(4, 32, k, v, "vllm")
    assert "throughput NOT within 3 % (+5.26 %" in verdict
    assert "streams kept decoding NOT within 3 % (+5.26 %" in verdict


def test_interval_is_seeded_and_brackets_the_mean():
    diffs = [1.0, -2.0, 3.5, 0.5, -1.0, 2.0]
    lo, hi = agreement.interval(diffs)
    assert (lo, hi) == agreement.interval(diffs)
    assert lo < sum(diffs) / len(diffs) < hi
    assert agreement.interval([2.0] * 5) == pytest.approx((2.0, 2.0))
