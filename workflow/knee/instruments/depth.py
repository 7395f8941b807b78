"""Depth instrument: one prompt per depth, prefilled for real, decode timed first to last token.

Each prompt is exactly `depth` tokens of the model's own tokenizer (the server's /tokenize),
sent as token ids, with a unique head so no depth can be served from another's prefix cache.
The prefix-cache counters are scraped around every request: a hit would time a re-prefill or
skip one (the reference write-up's broken first instrument), so it is refused, not measured.

Its comparison section, depth_curves: per session, decode rate against depth, the band, and the
points left out. A point is excluded, with its reason recorded, when its continuation was
unrepresentative: far more tokens per stream chunk than the other depths (the reference
write-up's 212K point: a repetitive continuation the drafter guessed in long streaks). The
band is the spread of the included points around the shallowest included one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from statistics import median
from typing import Any

from knee.core import prompts
from knee.core.errors import KneeError
from knee.core.records import InstrumentRun, RawFile
from knee.instruments.ports import Axes, Target, Tokenize, View, Windows
from knee.instruments.spec import Derived, Figure, Spec

HITS = "vllm:prefix_cache_hits_total"
QUERIES = "vllm:prefix_cache_queries_total"
STREAK_FACTOR = 1.5
SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["depths"],
    "properties": {
        "depths": {"type": "array", "minItems": 1, "uniqueItems": True,
                   "items": {"type": "integer", "minimum": 1, "maximum": 1048576}},
        "output_tokens": {"$ref": "#/$defs/tokens", "default": 64},
    },
}


def depth_prompt(tokenize: Tokenize, seed: int, depth: int) -> list[int]:
    """Exactly `depth` token ids of deterministic words (identical across arms)."""
    words = depth
    while True:
        ids = tokenize(prompts.word_prompts(seed, f"depth {depth}", 1, words)[0])
        if len(ids) >= depth:
            return ids[:depth]
        words *= 2


def counters(target: Target) -> tuple[float, float]:
    hits, queries = target.counters(HITS, QUERIES)
    return hits, queries


def run(target: Target, cfg: dict[str, Any]) -> InstrumentRun:
    sampling = target.sampling_params(cfg["output_tokens"])
    out: InstrumentRun = {"instrument": "depth", "points": [], "warmup": None}
    tokenize = target.tokenizer()
    for depth in cfg["depths"]:
        ids = depth_prompt(tokenize, target.seed, depth)
        hits0, queries0 = counters(target)
        result = target.send([ids], sampling)
        hits1, queries1 = counters(target)
        target.check_alive(f"depth {depth}")
        rec = result["records"][0]
        if rec["error"]:
            raise KneeError(f"depth {depth}: the request failed: {rec['error']}")
        if rec["prompt_tokens"] != depth:
            raise KneeError(f"depth {depth}: the server counted {rec['prompt_tokens']} prompt "
                            f"tokens, not {depth}")
        if hits1 - hits0 > 0:
            raise KneeError(
                f"depth {depth}: the prefix cache served {hits1 - hits0:g} of "
                f"{queries1 - queries0:g} prompt tokens, so the decode would not follow a real "
                "prefill at this depth; refusing to time it (use unique prompts or "
                "--no-enable-prefix-caching)")
        out["points"].append(target.record(
            result, point=depth,
            extra={"prefix_cache": {"hits": hits1 - hits0, "queries": queries1 - queries0}},
            instrument="depth", prompt_set=[ids], sampling=sampling,
            prompt_spec=f"{depth} token ids of random words, unique head"))
    return out


def curve(raw: RawFile,
          decode_rate: Callable[[Mapping[str, Any]], float | None]) -> dict[str, Any]:
    """One session's curve: decode_rate(record) is the comparison's decode rate."""
    points: list[dict[str, Any]] = []
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
                       "ttft_s": None if (first := rec["t_first"]) is None
                       else first - rec["t_send"], "included": True,
                       "reason": None})
    tpc = [d["tokens_per_chunk"] for d in points if d["tokens_per_chunk"]]
    typical = median(tpc) if tpc else None
    for d in points:
        if d["included"] and typical and d["tokens_per_chunk"] > STREAK_FACTOR * typical:
            d["included"] = False
            d["reason"] = (f"repetitive continuation: {d['chunks']} chunks, "
                           f"{d['tokens_per_chunk']:.1f} tokens per chunk against a median of "
                           f"{typical:.1f}")
        if d["included"] and d["decode_rate"] is None:
            d["included"], d["reason"] = False, "no decode span (single chunk)"
    included = [d for d in points if d["included"]]
    band = None
    if included:
        base = included[0]["decode_rate"]
        band = max(abs(d["decode_rate"] / base - 1) for d in included) * 100 if base else None
    return {"points": points, "band_pct": band}


def curves(windows: Windows) -> list[dict[str, Any]]:
    return [{"pair": pair, "arm": arm, **curve(raw, windows.decode_rate)}
            for (pair, arm), raw in sorted(windows.sessions.items())]


def draw(ax: Axes, view: View) -> None:
    """Decode rate against prompt depth per arm (mean over pairs), the band of the included
    points, excluded points shown and labelled with their recorded reason."""
    curves = view.comparison.get("depth_curves") or []
    for arm in ("control", "candidate"):
        mine = [c for c in curves if c["arm"] == arm]
        if not mine:
            continue
        depths = [p["depth"] for p in mine[0]["points"]]
        incl = [(d, view.mean([c["points"][i]["decode_rate"] for c in mine
                                if c["points"][i]["included"]])) for i, d in enumerate(depths)]
        incl = [(d, v) for d, v in incl if v is not None]
        if incl:
            xs, ys = zip(*incl, strict=True)
            ax.plot(xs, ys, "o-", color=view.colors[arm], label=arm)
            band = max(c["band_pct"] or 0 for c in mine)
            ax.fill_between(xs, [ys[0] * (1 - band / 100)] * len(xs),
                            [ys[0] * (1 + band / 100)] * len(xs), color=view.colors[arm],
                            alpha=0.12, label=f"{arm} ±{band:.1f}% band")
        for c in mine:
            for p in c["points"]:
                if not p["included"] and p["decode_rate"]:
                    ax.plot(p["depth"], p["decode_rate"], "x", color=view.colors[arm], ms=9)
                    ax.annotate(f"excluded (pair {c['pair']}): {p['reason'][:40]}",
                                (p["depth"], p["decode_rate"]), fontsize=6, va="bottom")
    if not curves:
        ax.text(0.5, 0.5, "no depth instrument in this experiment", ha="center",
                transform=ax.transAxes)
    else:
        ax.set_xscale("log")
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel("prompt depth (tokens, prefilled)")
    ax.set_ylabel("single-stream decode rate (tok/s)")


# it sends token ids, which only the completions endpoint takes; its figure is shown in the
# README's depth section, with the curves' table, not among the figures
def check(cfg: Mapping[str, Any], arms: Mapping[str, Any], source: str) -> None:
    """A depth plus its output must fit the server's context (the control's max-model-len)."""
    limit = arms["control"]["args"].get("max-model-len")
    if not isinstance(limit, int):
        return
    for i, d in enumerate(cfg["depths"]):
        if d + cfg["output_tokens"] > limit:
            raise KneeError(f"{source}: instruments.depth.depths[{i}]: {d} + output_tokens "
                            f"{cfg['output_tokens']} exceeds server.args.max-model-len {limit}")


SPEC = Spec(name="depth", title="Depth (single stream, one prompt per depth)", run=run,
            schema=SCHEMA, bar_points=lambda cfg: cfg["depths"], api="completions",
            random_prompts=True, check=check,
            derived=(Derived("depth_curves", curves),),
            figures=(Figure("depth", "decode rate against prompt depth",
                            "decode rate against prompt depth", draw, listed=False),))
