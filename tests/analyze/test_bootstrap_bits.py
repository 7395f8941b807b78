"""A within-pair interval is the same to the last bit on every CPU: its sums run in order and
its logs and exponentials go through the C library, so a published folder re-renders
byte-identical on a machine with other vector units (numpy's own sums, logs and exponentials
round by the vector width: the same resamples gave other last digits on an AVX2 machine than on
the AVX-512 one that rendered the folders). The bits below were computed once; a CPU, numpy or
C library that rounds any step differently fails here, naming the metric."""

import random

from knee.analyze import inference


def records(seed: int, n: int, scale: float) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        first, span = rng.uniform(0.05, 0.4), rng.uniform(0.5, 3.0) * scale
        out.append({"warmup": False, "error": None, "t_send": 0.0, "t_first": first,
                    "t_last": first + span, "t_done": first + span + 0.01,
                    "output_tokens": rng.randint(40, 64)})
    return out


CONTROL, CANDIDATE = records(1, 61, 1.0), records(2, 64, 0.9)
PINNED = {  # metric, centre -> the interval's bounds as float.hex
    ("decode_rate_p50", None): ("-0x1.dc7d3e658057ap+3", "0x1.43d6009e7d8bdp+5"),
    ("decode_rate_gmean", None): ("-0x1.8ecb305b50554p+3", "0x1.6f7d9020e8bcdp+4"),
    ("throughput", None): ("-0x1.00bd62fa2ca8dp+4", "0x1.3b9bd6a57b924p+4"),
    ("throughput", 12.5): ("-0x1.dab668793aa28p+1", "0x1.0081364840736p+5"),
    ("ttft_p50", None): ("-0x1.fa9908959fa09p+2", "0x1.e9eb9b80ddeaap+4"),
}


def computed() -> dict[tuple[str, float | None], tuple[str, ...]]:
    found = {}
    for metric, centre in PINNED:
        got = inference.within_pair_interval(CONTROL, CANDIDATE, metric, seed=7, centre=centre)
        found[(metric, centre)] = tuple(x.hex() for x in got) if got else ()
    return found


def test_a_within_pair_interval_has_the_same_bits_on_every_cpu():
    # runs without pytest too (python -c "...; test_...()"), on a machine being checked
    found = computed()
    assert {k: v for k, v in found.items() if v != PINNED[k]} == {}
