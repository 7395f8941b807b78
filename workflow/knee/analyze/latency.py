"""Latency's tail beside its median, per arm and point: time to first token and inter-token
latency (a request's time after its first token over the tokens after it, as GuideLLM and
AIPerf report it) at p50, p90 and p99 over every boot's measured requests of the arm at that
point (warm-up and failed requests apart). A description of the arms, not a verdict: a bar
rule decides on its figure's interval over the pairs."""

from __future__ import annotations

from typing import Any

from knee.analyze.folder import Sessions
from knee.analyze.stats import pct, tpot, ttft

QUANTILES = (50, 90, 99)
FIGURES = {"ttft": ttft, "itl": tpot}
REQUEST = {"warmup", "t_send", "t_first", "output_tokens"}  # a client request record


def point_latency(records: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in records if not r["warmup"] and not r.get("error")]
    out: dict[str, Any] = {"requests": len(ok)}
    for name, fn in FIGURES.items():
        values = [fn(r) for r in ok]
        out |= {f"{name}_s_p{q}": pct(values, q) for q in QUANTILES}
    return out


def section(sessions: Sessions) -> dict[str, Any]:
    """comparison.json's latency: a row per instrument, point and arm, in the order the plan
    measured the points."""
    pooled: dict[tuple[str, object], dict[str, list[dict[str, Any]]]] = {}
    for (_, arm), s in sorted(sessions.items()):
        for inst, raw in sorted(s["raw"].items()):
            for p in raw["points"]:
                recs = [r for r in p.get("records") or [] if REQUEST <= r.keys()]
                pooled.setdefault((inst, p["point"]), {}).setdefault(arm, []).extend(recs)
    rows = [{"instrument": inst, "point": point, "arm": arm, **point_latency(arms[arm])}
            for (inst, point), arms in pooled.items()
            for arm in ("control", "candidate") if arm in arms]
    rows = [r for r in rows if r["requests"]]
    return {"latency": rows} if rows else {}
