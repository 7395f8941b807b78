"""A toy instrument, the whole of it in this one file: one burst of exact-token prompts sent
all at once, a section of the comparison derived from its windows (each session's fastest and
slowest request) with the README caveat it gives, and a figure of its throughput.
tests/instruments/test_engine_instruments.py registers it and sees it planned, measured,
compared, derived, drawn and rendered, with nothing else in knee edited."""

from knee.core import prompts
from knee.instruments import Derived, Figure, Spec

SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "requests": {"type": "integer", "minimum": 1, "maximum": 64, "default": 3},
        "prompt_tokens": {"type": "integer", "minimum": 16, "maximum": 4096, "default": 32},
        "output_tokens": {"$ref": "#/$defs/tokens", "default": 8},
    },
}


def run(target, cfg: dict) -> dict:
    sampling = prompts.sampling_params(cfg["output_tokens"])
    ps = prompts.exact_token_prompts(target.tokenizer(), target.seed, "burst",
                                     cfg["requests"], cfg["prompt_tokens"])
    result = target.send(ps, sampling, concurrency=len(ps))
    target.check_alive("burst")
    point = target.record(result, point="burst", instrument="burst", prompt_set=ps,
                          sampling=sampling, concurrency=len(ps), prompt_spec="a burst")
    return {"instrument": "burst", "points": [point], "warmup": None}


def spans(windows) -> list[dict]:
    """Each session's fastest and slowest request of the burst, send to done (seconds)."""
    out = []
    for (pair, arm), raw in sorted(windows.sessions.items()):
        took = [r["t_done"] - r["t_send"] for p in raw["points"] for r in p["records"]
                if not r["warmup"] and not r["error"]]
        out.append({"pair": pair, "arm": arm, "requests": len(took),
                    "fastest_s": min(took, default=None), "slowest_s": max(took, default=None)})
    return out


def spans_caveat(spans: list[dict], comparison: dict, words) -> list[str]:
    said = [f"{s['pair']}-{s['arm']} {words.fmt(s['fastest_s'])}–{words.fmt(s['slowest_s'])} s"
            for s in spans if s["requests"]]
    return [f"Burst spans, fastest to slowest request: {', '.join(said)}."] if said else []


def draw(ax, view) -> None:
    """Each pair's burst throughput, control against candidate."""
    rows = [r for r in view.comparison["rows"] if r["instrument"] == "burst"
            and r["metric"] == "throughput" and r["pair"] != "all"]
    for arm in ("control", "candidate"):
        ax.plot([r["pair"] for r in rows], [r[arm] for r in rows], "o", label=arm,
                color=view.colors[arm])
    if not rows:
        ax.text(0.5, 0.5, "no burst window", ha="center", transform=ax.transAxes)
    ax.set_xlabel("boot pair")
    ax.set_ylabel("burst throughput (tok/s)")


SPEC = Spec(name="burst", title="Burst (every request at once)", run=run, schema=SCHEMA,
            bar_points=lambda cfg: ["burst"],
            derived=(Derived("burst_spans", spans, spans_caveat),),
            figures=(Figure("burst", "burst throughput per pair", "burst throughput", draw),))
