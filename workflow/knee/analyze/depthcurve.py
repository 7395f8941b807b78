"""Decode rate against prompt depth (pure): the line, its band, and the points left out.

A point is excluded, with its reason recorded, when its continuation was unrepresentative:
far more tokens per stream chunk than the other depths (the reference write-up's 212K point: a
repetitive continuation the drafter guessed in long streaks). The band is the spread of the included
points around the shallowest included one.
"""

from __future__ import annotations

from statistics import median

from knee.analyze.stats import decode_rate

STREAK_FACTOR = 1.5


def curve(raw: dict) -> dict:
    points = []
    for p in raw["points"]:
        rec = next((r for r in p["records"] if not r["warmup"]), None)
        if rec is None or rec.get("error"):
            points.append({"depth": p["point"], "decode_rate": None, "chunks": 0,
                           "tokens_per_chunk": None, "included": False,
                           "reason": f"request failed: {rec and rec.get('error')}"})
            continue
        chunks = len(rec["chunk_times"])
        points.append({"depth": p["point"], "decode_rate": decode_rate(rec), "chunks": chunks,
                       "tokens_per_chunk": rec["output_tokens"] / chunks if chunks else None,
                       "ttft_s": rec["t_first"] - rec["t_send"], "included": True,
                       "reason": None})
    tpc = [p["tokens_per_chunk"] for p in points if p["tokens_per_chunk"]]
    typical = median(tpc) if tpc else None
    for p in points:
        if p["included"] and typical and p["tokens_per_chunk"] > STREAK_FACTOR * typical:
            p["included"] = False
            p["reason"] = (f"repetitive continuation: {p['chunks']} chunks, "
                           f"{p['tokens_per_chunk']:.1f} tokens per chunk against a median of "
                           f"{typical:.1f}")
        if p["included"] and p["decode_rate"] is None:
            p["included"], p["reason"] = False, "no decode span (single chunk)"
    included = [p for p in points if p["included"]]
    band = None
    if included:
        base = included[0]["decode_rate"]
        band = max(abs(p["decode_rate"] / base - 1) for p in included) * 100 if base else None
    return {"points": points, "band_pct": band}
