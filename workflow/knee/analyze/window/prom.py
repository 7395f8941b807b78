"""Prometheus scrape analysis: parse with prometheus_client, diff after - before, spec-decode.

Pure functions: text in, numbers out. A counter that must move with traffic (generation and
prompt tokens; draft tokens once drafts were proposed) and did not, a counter that went down, a
missing series with speculation on, or a scrape pair that brackets no requests is an error naming
the window and the file, never a zero in a table. A counter that may legitimately stay flat
(drafts when the drafter found nothing; accepted tokens when every draft was rejected) is a
measured zero, said so in the window's flags.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from prometheus_client.parser import text_string_to_metric_families

from knee import instruments
from knee.analyze import sampling
from knee.analyze.folder import Sessions
from knee.analyze.stats import in_flight, window_client_summary
from knee.analyze.window import exposition
from knee.core import jsonio, rawfiles
from knee.core.errors import KneeError
from knee.core.jsonio import config_default
from knee.core.records import BootReceipt, RawFile, RawWindow, WindowMetrics
from knee.core.records.window import (
    AcceptanceRow,
    CounterDisagreement,
    Histogram,
    PointMetrics,
    WindowDeltas,
)

KNEE_THRESHOLD = config_default("analysis.knee_threshold")
DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
GENERATION = "vllm:generation_tokens_total"
PROMPT = "vllm:prompt_tokens_total"
REQUESTS = "vllm:request_success_total"
SPEC = (DRAFTS, DRAFT_TOKENS, ACCEPTED)
HISTOGRAMS = {
    "ttft_s": "vllm:time_to_first_token_seconds",
    "inter_token_latency_s": "vllm:inter_token_latency_seconds",
    "queue_s": "vllm:request_queue_time_seconds",
    "prefill_s": "vllm:request_prefill_time_seconds",
    "decode_s": "vllm:request_decode_time_seconds",
    "e2e_s": "vllm:e2e_request_latency_seconds",
}
STEP_TIME_SOURCE = "mean of vllm:inter_token_latency_seconds over the window (sum/count deltas)"

Samples = dict[str, dict[tuple[Any, ...], float]]


def parse(text: str, source: str = "scrape") -> Samples:
    """Samples by exact name, labels kept; `_created` samples dropped (knee.analyze.window.
    exposition's fast reading, and prometheus_client's parser for any text it leaves)."""
    if (fast := exposition.samples(text)) is not None:
        return fast
    out: Samples = defaultdict(dict)
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if not s.name.endswith("_created"):
                    out[s.name][tuple(sorted(s.labels.items()))] = s.value
    except ValueError as e:
        raise KneeError(f"{source}: not Prometheus text format: {e}") from None
    return dict(out)


@overload
def total(samples: Samples, name: str, by: None = None) -> float | None: ...


@overload
def total(samples: Samples, name: str, by: str) -> dict[str, float] | None: ...


def total(samples: Samples, name: str,
          by: str | None = None) -> float | dict[str, float] | None:
    """Sum a series over the engine label (and every label but `by`, if given); None if absent."""
    if name not in samples:
        return None
    if by is None:
        return math.fsum(samples[name].values())
    grouped: dict[str, float] = defaultdict(float)
    for labels, value in samples[name].items():
        grouped[dict(labels).get(by, "")] += value
    return dict(grouped)


def counter_delta(before: Samples, after: Samples, name: str, window: str,
                  requests: int, files: str) -> float:
    b, a = total(before, name), total(after, name)
    if a is None or b is None:
        raise KneeError(f"{window}: series {name} missing from the "
                        f"{'after' if a is None else 'before'} scrape ({files})")
    delta = a - b
    if delta < 0:
        raise KneeError(f"{window}: {name} went down ({b:g} -> {a:g}): the engine restarted "
                        f"inside the window ({files})")
    if delta == 0 and requests > 0:
        raise KneeError(f"{window}: {name} did not move over a window of {requests} requests: "
                        f"the scrapes do not bracket the traffic ({files})")
    return delta


def histogram_delta(before: Samples, after: Samples, name: str) -> Histogram | None:
    """Count, sum, mean and p50/p90/p99 (bucket interpolation) of a histogram's window delta."""
    count_a, count_b = total(after, f"{name}_count"), total(before, f"{name}_count")
    sum_a, ba = total(after, f"{name}_sum"), total(after, f"{name}_bucket", "le")
    if count_a is None or count_b is None or sum_a is None or ba is None:
        return None  # not in the scrape (a histogram has all three series, or none)
    count = count_a - count_b
    total_s = sum_a - (total(before, f"{name}_sum") or 0.0)
    bb = total(before, f"{name}_bucket", "le") or {}
    buckets = sorted(((float(le), ba[le] - bb.get(le, 0.0)) for le in ba), key=lambda x: x[0])
    p50, p90, p99 = (bucket_quantile(q / 100, buckets) if count else None for q in (50, 90, 99))
    return {"count": count, "sum": total_s, "mean": total_s / count if count else None,
            "p50": p50, "p90": p90, "p99": p99}


def bucket_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile: linear interpolation inside the bucket holding rank q."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for upper, cumulative in buckets:
        if cumulative >= rank:
            if upper == float("inf"):
                return lower_bound
            width = cumulative - lower_count
            frac = (rank - lower_count) / width if width else 0.0
            return lower_bound + (upper - lower_bound) * frac
        lower_bound, lower_count = upper, cumulative
    return lower_bound


def window_deltas(before_text: str, after_text: str, window: str, requests: int,
                  speculation: bool, client_tokens: int | None = None,
                  files: str = "", knee_threshold: float = KNEE_THRESHOLD,
                  draft_ks: Sequence[int] = ()) -> WindowDeltas:
    """Checked counter deltas, server histograms and spec-decode analysis over one window.
    draft_ks: the draft lengths the arm's speculative config may use (draft_lengths); one or
    none: every draft proposed every position."""
    if requests <= 0:
        raise KneeError(f"{window}: the scrape pair brackets no requests ({files})")
    before = parse(before_text, f"{window} before")
    after = parse(after_text, f"{window} after")
    out: WindowDeltas = {
        "window": window, "requests": requests,
        "generation_tokens": counter_delta(before, after, GENERATION, window, requests, files),
        "prompt_tokens": counter_delta(before, after, PROMPT, window, requests, files),
        "flags": [], "server_latency": {}, "speculation": "on" if speculation else "off"}
    if client_tokens is not None:
        out["client_output_tokens"] = client_tokens
        if client_tokens != out["generation_tokens"]:
            out["flags"].append(
                f"server generation tokens {out['generation_tokens']:g} != client-counted "
                f"output tokens {client_tokens}")
    out["server_latency"] = {k: histogram_delta(before, after, n) for k, n in HISTOGRAMS.items()}
    present = all(total(after, n) is not None for n in SPEC)
    if not speculation:
        return out
    if not present:
        missing = [n for n in SPEC if total(after, n) is None]
        raise KneeError(f"{window}: speculation is on but {', '.join(missing)} missing from "
                        f"the after scrape ({files})")
    return spec_deltas(out, before, after, files, knee_threshold, draft_ks)


def spec_deltas(out: WindowDeltas, before: Samples, after: Samples, files: str,
                knee_threshold: float, draft_ks: Sequence[int]) -> WindowDeltas:
    """The spec-decode counters' deltas over a window whose generation-token delta was checked
    (out), with acceptance and the ceiling it implies."""
    window, requests = out["window"], out["requests"]
    # The generation-token delta above proves the scrapes bracket the traffic; drafts can then
    # truly be zero (an ngram drafter that found no match): said so in words, never a 0 rate.
    drafts = counter_delta(before, after, DRAFTS, window, 0, files)
    if drafts == 0:
        out["spec_decode_num_drafts"] = 0.0
        out["flags"].append("no drafts proposed in this window (the drafter found nothing to "
                            "propose): no acceptance figures")
        return out
    # Drafts moved, so draft tokens must have; accepted tokens may truly stay flat (every
    # draft rejected): a measured acceptance of 0, never a broken scrape.
    out["spec_decode_num_drafts"] = drafts
    proposed = counter_delta(before, after, DRAFT_TOKENS, window, requests, files)
    accepted = counter_delta(before, after, ACCEPTED, window, 0, files)
    out["spec_decode_num_draft_tokens"] = proposed
    out["spec_decode_num_accepted_tokens"] = accepted
    if accepted > proposed:
        raise KneeError(f"{window}: {ACCEPTED} moved by {accepted:g}, more than the "
                        f"{proposed:g} draft tokens proposed: not a measurement ({files})")
    if accepted == 0:
        out["flags"].append("every draft was rejected in this window: acceptance 0 (measured)")
    pa, pb = total(after, PER_POS, "position") or {}, total(before, PER_POS, "position") or {}
    out["spec_decode_num_accepted_tokens_per_pos"] = [
        pa[p] - pb.get(p, 0.0) for p in sorted(pa, key=int)]
    out = spec_summary(out, knee_threshold, draft_ks)
    if out["per_position_rate"] and out["per_position_rate"][-1] is None:
        out["flags"].append(
            f"draft lengths {sorted(set(draft_ks))} in one window: how many drafts proposed a "
            "position past the shortest cannot be told from the counters, so its rate is not "
            "shown")
    itl = out["server_latency"]["inter_token_latency_s"]
    return ceiling(out, itl["mean"] if itl else None)


def draft_lengths(spec: Mapping[str, Any] | None, in_flight: int | None = None) -> list[int]:
    """The draft lengths (k) a speculative config may use with at most `in_flight` requests
    running (None: any number): its one k, or the k of every row of its batch size schedule
    (num_speculative_tokens_per_batch_size: [low, high, k]) that starts at or below it, and
    its own k where the schedule leaves a batch size uncovered; 0 proposes nothing."""
    if not spec:
        return []
    own = int(spec.get("num_speculative_tokens") or 0)
    rows = [(int(lo), int(hi), int(k))
            for lo, hi, k in spec.get("num_speculative_tokens_per_batch_size") or []]
    if not rows:
        return [own] if own > 0 else []
    top = in_flight if in_flight is not None else max(hi for _, hi, _ in rows)
    ks = {k for lo, _, k in rows if lo <= top}
    if any(not any(lo <= b <= hi for lo, hi, _ in rows) for b in range(1, top + 1)):
        ks.add(own)
    return sorted(k for k in ks if k > 0)


def proposing_drafts(drafts: float, positions: int, ks: Sequence[int]) -> list[float | None]:
    """The drafts that proposed each position, where the counters tell: with one draft length,
    every draft (vLLM's own definition: the share of drafts that reached the position); with
    several, every draft up to the shortest length and, past it, None: the counters do not say
    how many drafts of which length ran (an ngram draft may also be cut short)."""
    if len(set(ks)) <= 1:
        return [drafts] * positions
    return [drafts if i < min(ks) else None for i in range(positions)]


def spec_summary(d: WindowDeltas, knee_threshold: float = KNEE_THRESHOLD,
                 draft_ks: Sequence[int] = ()) -> WindowDeltas:
    """d with the reference write-ups' figures: rates over drafts and draft tokens, and the knee
    position. A position's rate divides its accepted tokens by the drafts that proposed it
    (proposing_drafts); a position where the counters cannot tell how many did has None."""
    drafts = d["spec_decode_num_drafts"]
    accepted = d["spec_decode_num_accepted_tokens"]
    per_pos = d.get("spec_decode_num_accepted_tokens_per_pos", [])
    proposed = proposing_drafts(drafts, len(per_pos), draft_ks)
    rates = [x / n if n else None for x, n in zip(per_pos, proposed, strict=True)]
    acceptance_knee = next((i + 1 for i, r in enumerate(rates)
                            if r is not None and r < knee_threshold), None)
    return d | {
        "acceptance_rate": accepted / d["spec_decode_num_draft_tokens"],
        "mean_acceptance_length": 1 + accepted / drafts,
        "tokens_per_step": 1 + accepted / drafts,
        "per_position_rate": rates,
        "knee_threshold": knee_threshold,
        "knee_position": acceptance_knee,
    }


def ceiling(d: WindowDeltas, step_time_s: float | None) -> WindowDeltas:
    """d with its ceiling: per-user decode = tokens per step / step time; at perfect
    acceptance (k + 1) / step time."""
    k = len(d.get("spec_decode_num_accepted_tokens_per_pos", []))
    per_step = d.get("tokens_per_step")
    if not step_time_s or not k or per_step is None:
        return d | {"step_time_s": step_time_s, "step_time_source": STEP_TIME_SOURCE,
                    "modelled_decode_rate": None, "ceiling_decode_rate": None}
    return d | {"step_time_s": step_time_s, "step_time_source": STEP_TIME_SOURCE, "k": k,
                "modelled_decode_rate": per_step / step_time_s,
                "ceiling_decode_rate": (k + 1) / step_time_s}


def acceptance_table(windows: Sequence[WindowMetrics],
                     sources: list[Any]) -> list[AcceptanceRow]:
    """One row per session window, with the file it came from."""
    keys = ("speculation", "knee_threshold", "client_latency", "server_latency",
            "generation_tokens", "client_output_tokens",
            "acceptance_rate", "mean_acceptance_length", "per_position_rate", "knee_position",
            "step_time_s", "modelled_decode_rate", "ceiling_decode_rate", "flags",
            "temperatures")
    # the window's own keys, each None where the window has none (a withheld one's only where
    # it has one); AcceptanceRow declares each
    return [cast(AcceptanceRow, {
        "session": w["session"], "instrument": w["instrument"], "source": str(src),
        **{k: w.get(k) for k in keys}, **{k: w[k] for k in ("sampling_withheld",) if k in w}})
        for w, src in zip(windows, sources, strict=True)]


def instrument_metrics(raw: Mapping[str, Any], before: str, after: str, speculation: bool,
                       knee_threshold: float, files: str,
                       withheld: Mapping[float | str, str] | None = None,
                       spec: Mapping[str, Any] | None = None) -> WindowMetrics:
    """The window metrics of one instrument run (and, where each point brackets scrapes of its
    own, as the probe's temperatures do, of each point). withheld: temperature -> why the
    engine's sampling there is not a measurement (knee.analyze.sampling.withheld): a window or
    point sampled at one gets no acceptance figures, and says why. spec: the arm's speculative
    config, whose draft lengths at the window's most requests in flight say which positions
    every draft proposed."""
    warmup = (raw.get("warmup") or {}).get("records", [])
    records = [r for p in raw["points"] for r in p["records"]] + warmup
    most = max([in_flight(p["records"]) for p in raw["points"]] + [in_flight(warmup)])
    deltas = window_deltas(before, after, f"{raw['session']}/{raw['instrument']}",
                           requests=len(records), speculation=speculation,
                           client_tokens=sum(r["output_tokens"] for r in records), files=files,
                           knee_threshold=knee_threshold, draft_ks=draft_lengths(spec, most))
    gone = withheld or {}
    if why := next(filter(None, (sampling.point_reason(gone, p) for p in raw["points"])), None):
        deltas = withhold(deltas, why)
    # WindowDeltas's keys and the window's own (a WindowDeltas can hold no other key)
    out = cast(WindowMetrics, {"session": raw["session"], "instrument": raw["instrument"],
                               "client_latency": window_client_summary(records), **deltas})
    if instruments.get(raw["instrument"]).point_scrapes and \
            all("prom_before" in p for p in raw["points"]):
        out["temperatures"] = [point_metrics(raw, p, speculation, knee_threshold, files, gone,
                                             spec) for p in raw["points"]]
    return out


def point_metrics(raw: Mapping[str, Any], p: RawWindow, speculation: bool,
                  knee_threshold: float,
                  files: str, withheld: Mapping[float | str, str],
                  spec: Mapping[str, Any] | None = None) -> PointMetrics:
    """One point's own window metrics, from the scrapes embedded in its record."""
    out: PointMetrics = {"point": p["point"], **window_deltas(
        p["prom_before"], p["prom_after"], f"{raw['session']}/{raw['instrument']} {p['point']}",
        requests=len(p["records"]), speculation=speculation,
        client_tokens=sum(r["output_tokens"] for r in p["records"]),
        files=f"{files} (embedded scrapes of {p['point']})", knee_threshold=knee_threshold,
        draft_ks=draft_lengths(spec, in_flight(p["records"])))}
    why = sampling.point_reason(withheld, p)
    return withhold(out, why) if why else out


SPEC_FIGURES = ("acceptance_rate", "mean_acceptance_length", "tokens_per_step",
                "per_position_rate", "knee_position", "knee_threshold", "k",
                "modelled_decode_rate", "ceiling_decode_rate")


Metrics = TypeVar("Metrics", WindowDeltas, PointMetrics)


def withhold(metrics: Metrics, why: str) -> Metrics:
    """A window's metrics without its acceptance figures, and why (its counters stay)."""
    if metrics.get("speculation") != "on":
        return metrics
    kept = {k: v for k, v in metrics.items() if k not in SPEC_FIGURES}
    return cast(Metrics, kept | {"sampling_withheld": why})  # the same keys, less some


def window_metrics(raw: Mapping[str, Any], boot: BootReceipt, before: Path, after: Path,
                   knee_threshold: float) -> WindowMetrics:
    """One instrument window's metrics from its raw file and scrapes (workflow and audit)."""
    return instrument_metrics(
        raw, jsonio.read_text(before), jsonio.read_text(after),
        speculation=bool(boot["server"].get("speculative_config")),
        knee_threshold=knee_threshold, files=f"{before}, {after}",
        withheld=sampling.withheld(boot), spec=boot["server"].get("speculative_config"))


def disagreement(raw: RawFile, before: str, after: str) -> str | None:
    """Where an instrument window's raw records do not hold the traffic the server counted (its
    generation tokens against the output tokens of every record, warm-up included): why, or
    None. A server knee booted serves nothing else, so the two are equal in every measured
    window; a record removed from (or added to) a raw file shows here."""
    records = [r for p in raw["points"] for r in p["records"]]
    records += (raw.get("warmup") or {}).get("records", [])
    b = total(parse(before, "the before scrape"), GENERATION)
    a = total(parse(after, "the after scrape"), GENERATION)
    client = sum(r["output_tokens"] for r in records)
    if a is None or b is None or a - b == client:
        return None
    return (f"the server counted {a - b:g} generated tokens, the raw records hold {client} "
            f"({len(records)} requests)")


def counter_disagreements(sessions: Sessions) -> list[CounterDisagreement]:
    """Every window of every session whose raw records disagree with the server's counters
    (sessions as knee.analyze.folder.load_sessions gives them)."""
    out: list[CounterDisagreement] = []
    for (pair, arm), s in sorted(sessions.items()):
        for inst, raw in sorted(s["raw"].items()):
            if inst not in (s.get("files") or {}):
                continue  # sessions made in memory (simulations) have no scrapes
            folder = Path(s["files"][inst]).parent
            try:
                before, after = (jsonio.read_text(rawfiles.stored(folder, f"{inst}.{kind}"))
                                 for kind in ("prom.before", "prom.after"))
            except KneeError:
                continue  # a window without its scrapes is refused where they are read
            if why := disagreement(raw, before, after):
                out.append({"session": f"{pair}-{arm}", "instrument": inst, "why": why})
    return out
