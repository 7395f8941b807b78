"""Per-request and per-point figures from raw records (pure; the seeds' definitions)."""

from __future__ import annotations

import numpy as np


def decode_rate(rec: dict) -> float | None:
    """(output tokens - 1) / (last chunk - first chunk); TTFT excluded; never chunks/s."""
    if rec.get("error") or rec["t_first"] is None or rec["output_tokens"] < 2:
        return None
    span = rec["t_last"] - rec["t_first"]
    return (rec["output_tokens"] - 1) / span if span > 0 else None


def ttft(rec: dict) -> float | None:
    if rec.get("error") or rec["t_first"] is None:
        return None
    return rec["t_first"] - rec["t_send"]


def pct(values: list[float], q: float) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.percentile(vals, q)) if vals else None


def point_summary(point: dict) -> dict:
    """A point's figures: p50/p90 over its requests, aggregate throughput = tokens / wall."""
    recs = [r for r in point["records"] if not r["warmup"]]
    ok = [r for r in recs if not r.get("error")]
    rates = [decode_rate(r) for r in ok]
    ttfts = [ttft(r) for r in ok]
    tokens = sum(r["output_tokens"] for r in ok)
    return {
        "requests": len(recs),
        "errors": len(recs) - len(ok),
        "output_tokens": tokens,
        "wall_s": point["wall_s"],
        "throughput": tokens / point["wall_s"] if point["wall_s"] > 0 else None,
        "decode_rate_p50": pct(rates, 50),
        "decode_rate_p90": pct(rates, 90),
        "ttft_p50": pct(ttfts, 50),
        "ttft_p90": pct(ttfts, 90),
    }


def window_client_summary(records: list[dict]) -> dict:
    """The client's view of a whole window (every request in it), beside the server's."""
    ok = [r for r in records if not r.get("error")]
    ttfts = [ttft(r) for r in ok]
    e2e = [r["t_done"] - r["t_send"] for r in ok if r.get("t_done") is not None]
    return {"requests": len(ok), "ttft_s_mean": _mean(ttfts), "ttft_s_p50": pct(ttfts, 50),
            "e2e_s_mean": _mean(e2e), "e2e_s_p50": pct(e2e, 50)}


def _mean(values: list) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None
