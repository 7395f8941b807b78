"""Latency's tail beside its median, per arm and point: time to first token and inter-token
latency (a request's time after its first token over the tokens after it, as GuideLLM and
AIPerf report it) at p50, p90 and p99 over every boot's measured requests of the arm at that
point (warm-up and failed requests apart). A description of the arms, not a verdict: a bar
rule decides on its figure's interval over the pairs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from knee.analyze.folder import Sessions
from knee.analyze.stats import pct, tpot, ttft
from knee.core.records import LatencyRow, Point, RequestRecord

QUANTILES = (50, 90, 99)  # LatencyRow's
REQUEST = {"warmup", "t_send", "t_first", "output_tokens"}  # a client request record


def point_latency(instrument: str, point: Point, arm: str,
                  records: Sequence[RequestRecord]) -> LatencyRow:
    """One instrument, point and arm: its requests' TTFT and inter-token latency at each of
    QUANTILES."""
    ok = [r for r in records if not r["warmup"] and not r.get("error")]
    ttfts, itls = [ttft(r) for r in ok], [tpot(r) for r in ok]
    ttft_q = [pct(ttfts, q) for q in QUANTILES]
    itl_q = [pct(itls, q) for q in QUANTILES]
    return {"instrument": instrument, "point": point, "arm": arm, "requests": len(ok),
            "ttft_s_p50": ttft_q[0], "ttft_s_p90": ttft_q[1], "ttft_s_p99": ttft_q[2],
            "itl_s_p50": itl_q[0], "itl_s_p90": itl_q[1], "itl_s_p99": itl_q[2]}


class LatencySection(TypedDict, total=False):
    """comparison.json's latency (no key where no point had a request)."""

    latency: list[LatencyRow]


def section(sessions: Sessions) -> LatencySection:
    """comparison.json's latency: a row per instrument, point and arm, in the order the plan
    measured the points."""
    pooled: dict[tuple[str, Point], dict[str, list[RequestRecord]]] = {}
    for (_, arm), s in sorted(sessions.items()):
        for inst, raw in sorted(s["raw"].items()):
            for p in raw["points"]:
                recs = [r for r in p.get("records") or [] if REQUEST <= r.keys()]
                pooled.setdefault((inst, p["point"]), {}).setdefault(arm, []).extend(recs)
    rows = [point_latency(inst, point, arm, arms[arm])
            for (inst, point), arms in pooled.items()
            for arm in ("control", "candidate") if arm in arms]
    rows = [r for r in rows if r["requests"]]
    return {"latency": rows} if rows else {}
