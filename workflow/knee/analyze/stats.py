"""Per-request and per-point figures from raw records (pure; the reference write-ups'
definitions)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from knee.core.records import RawWindow, RequestRecord
from knee.core.records.window import ClientSummary


def decode_rate(rec: Mapping[str, Any]) -> float | None:
    """(output tokens - 1) / (last chunk - first chunk); TTFT excluded; never chunks/s."""
    if rec.get("error") or rec["t_first"] is None or rec["output_tokens"] < 2:
        return None
    span = rec["t_last"] - rec["t_first"]
    return (rec["output_tokens"] - 1) / span if span > 0 else None


def ttft(rec: Mapping[str, Any]) -> float | None:
    if rec.get("error") or rec["t_first"] is None:
        return None
    out: float = rec["t_first"] - rec["t_send"]
    return out


def tpot(rec: Mapping[str, Any]) -> float | None:
    """Time per output token after the first: (done - first chunk) / (output tokens - 1)."""
    if rec.get("error") or rec["t_first"] is None or rec["output_tokens"] < 2 \
            or rec.get("t_done") is None:
        return None
    out: float = (rec["t_done"] - rec["t_first"]) / (rec["output_tokens"] - 1)
    return out


def e2e(rec: Mapping[str, Any]) -> float | None:
    if rec.get("error") or rec.get("t_done") is None:
        return None
    out: float = rec["t_done"] - rec["t_send"]
    return out


def stream_span(rec: RequestRecord) -> float | None:
    """Seconds from a request's first streamed token to its last (None before a first)."""
    first, last = rec["t_first"], rec["t_last"]
    return last - first if first is not None and last is not None else None


def chunk_gaps(rec: Mapping[str, Any]) -> list[float]:
    times = rec.get("chunk_times") or []
    return [b - a for a, b in itertools.pairwise(times)]


PER_REQUEST = {"ttft": ttft, "decode_rate": decode_rate, "tpot": tpot, "e2e": e2e}


def _edges(records: Sequence[Mapping[str, Any]]) -> list[tuple[float, int]]:
    """Each request's send (+1) and done (-1), in time order (a done before a send at one
    instant)."""
    return sorted((e for r in records if r.get("t_done") is not None
                   for e in ((r["t_send"], 1), (r["t_done"], -1))), key=lambda e: (e[0], e[1]))


def in_flight(records: Sequence[Mapping[str, Any]]) -> int:
    """The most requests a point's records had in flight at once (send to done)."""
    most = now = 0
    for _, step in _edges(records):
        now += step
        most = max(most, now)
    return most


def held_share(records: Sequence[Mapping[str, Any]], concurrency: int) -> float | None:
    """The share of a closed loop's time, first send to last done, with `concurrency` requests
    in flight: the rest is the ramp and the drain, where the engine ran a smaller batch."""
    edges = _edges(records)
    if not edges or edges[-1][0] <= edges[0][0]:
        return None
    held = now = 0.0
    for (t, step), (t_next, _) in zip(edges, [*edges[1:], edges[-1]], strict=True):
        now += step
        if now >= concurrency:
            held += t_next - t
    return held / (edges[-1][0] - edges[0][0])


def pct(values: Sequence[float | None], q: float) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.percentile(vals, q)) if vals else None


def gmean(values: Sequence[float | None]) -> float | None:
    """Geometric mean of the positive values that are not None; None if there are none. Over
    the same requests in both arms, log(candidate / control) of two such means is the mean
    over requests of each request's own log ratio: the figure pairs the requests."""
    vals = [v for v in values if v is not None and v > 0]
    return math.exp(fmean([math.log(v) for v in vals])) if vals else None


def point_summary(point: RawWindow) -> dict[str, Any]:
    """A point's figures: p50/p90/p99 over its requests of TTFT, decode rate, TPOT, E2E and
    chunk gap (pooled); aggregate throughput = output tokens / wall time. Errors are counted
    and the point is marked, never silently averaged."""
    recs = [r for r in point["records"] if not r["warmup"]]
    ok = [r for r in recs if not r.get("error")]
    tokens = sum(r["output_tokens"] for r in ok)
    out = {
        "requests": len(recs),
        "errors": len(recs) - len(ok),
        "has_errors": len(recs) != len(ok),
        "output_tokens": tokens,
        "wall_s": point["wall_s"],
        "throughput": tokens / point["wall_s"] if point["wall_s"] > 0 else None,
    }
    gaps = [g for r in ok for g in chunk_gaps(r)]
    for name, fn in PER_REQUEST.items():
        values = [fn(r) for r in ok]
        for q in (50, 90, 99):
            out[f"{name}_p{q}"] = pct(values, q)
    for q in (50, 90, 99):
        out[f"chunk_gap_p{q}"] = pct(gaps, q)
    out["decode_rate_gmean"] = gmean([decode_rate(r) for r in ok])
    return out


def window_client_summary(records: Sequence[RequestRecord]) -> ClientSummary:
    """The client's view of a whole window (every request in it), beside the server's."""
    ok = [r for r in records if not r.get("error")]
    ttfts = [ttft(r) for r in ok]
    e2es = [e2e(r) for r in ok]
    return {"requests": len(ok), "ttft_s_mean": mean(ttfts), "ttft_s_p50": pct(ttfts, 50),
            "e2e_s_mean": mean(e2es), "e2e_s_p50": pct(e2es, 50)}


def mean(values: Sequence[float | None]) -> float | None:
    """Mean of the values that are not None; None if there are none."""
    vals = [v for v in values if v is not None]
    return fmean(vals) if vals else None


def fmean(values: Sequence[float]) -> float:
    """Mean of a non-empty list of numbers. The sum is rounded once (math.fsum), so the same
    raw file gives the same digits on every Python (3.12's sum() compensates, 3.11's does
    not)."""
    return math.fsum(values) / len(values)
