"""The figures a comparison row and a bar rule may name, each declared once: its unit, which way
is better, the per-request figure a within-pair interval resamples and the statistic over a
window's requests. The config schema's metric enum, the comparison's rows, the within-pair
bootstrap and the tidy table's column words are read from here; a gain rule on a figure that
is better lower is refused at the config (its effect would read backwards)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    better: Literal["higher", "lower"]
    request: str  # a request's own figure (knee.analyze.inference.REQUEST_FIGURES)
    statistic: Literal["p50", "mean", "gmean"]  # over a window's requests
    note: str = ""  # what the unit alone does not say, in the tidy table's words


METRICS = (
    # in a closed loop aggregate throughput is concurrency x the mean per-request rate: its
    # within-pair interval resamples that mean
    Metric("throughput", "tok/s", "higher", "request_rate", "mean"),
    Metric("decode_rate_p50", "tok/s", "higher", "decode_rate", "p50"),
    Metric("ttft_p50", "s", "lower", "ttft", "p50"),
    Metric("decode_rate_gmean", "tok/s", "higher", "decode_rate", "gmean",
           "the geometric mean over requests"),
)
NAMES = tuple(m.name for m in METRICS)
BY_NAME = {m.name: m for m in METRICS}


def words() -> str:
    """`throughput (tok/s), ... or decode_rate_gmean (tok/s, the geometric mean over
    requests)`: every metric with its unit."""
    each = [f"{m.name} ({m.unit}{', ' + m.note if m.note else ''})" for m in METRICS]
    return f"{', '.join(each[:-1])} or {each[-1]}"
