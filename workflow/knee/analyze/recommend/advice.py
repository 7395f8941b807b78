"""`knee recommend`: which k to run at which load, from one measured experiment (pure analysis:
it reads the plan, the raw sweep records and the window metrics; it boots nothing and sends no
request).

What it measures, per session and sweep concurrency c: the step time (median over requests of
the chunk span / (chunks - 1): one stream chunk per engine step), the tokens per step ((output
tokens - 1) / (chunks - 1)), TTFT and throughput. From these and the acceptance counters:
- a_i, per-position acceptance, pooled over the windows (probe and sweep) of the sessions that
  ran the longest horizon K at every batch size; tokens per step at k <= K at c scale the
  measured excess over one token by sum(a_1..a_k) / sum(a_1..a_K), corrected by gamma(k) where
  a second, shorter horizon was measured (Model.draft_availability);
- step(c, k) = b0 + b1 c + b2 k + b3 c k fitted to every session's step times (both arms: the
  terms separate only where the measured k differ);
- per-user decode rate = tokens per step / step time; throughput at c = eta(c) c N / (TTFT(c) +
  (N - 1) step / tokens per step), eta(c) the measured ratio of throughput to that closed-loop
  formula at the measured k (ramp and tail of the window);
- intervals: the whole chain refitted on boot pairs resampled with replacement (the boot pair
  is the unit of replication), percentile interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import TypedDict, cast

import numpy as np

from knee import instruments
from knee.analyze import hostfigures, stats
from knee.analyze.folder import Named, reader, realized_sessions
from knee.analyze.recommend import parts, speculation
from knee.analyze.recommend.parts import RESAMPLES, Resamples, load
from knee.analyze.recommend.speculation import session_k
from knee.core import layout, rawfiles
from knee.core.errors import KneeError
from knee.core.records import Plan, RawFile, RawWindow, Recommendation, SessionRaw
from knee.core.records.recommendation import (
    AcceptanceWindow,
    Figures,
    Observation,
    PointFigures,
)

MIN_POINTS = 3


class Refused(KneeError):
    """The data cannot support a recommendation; the message says why."""


def point_observation(points: list[RawWindow], c: int, output_tokens: int) -> PointFigures:
    """One session's figures at concurrency c, over its runs."""
    recs = [r for p in points for r in p["records"]
            if not r["warmup"] and not r.get("error") and len(r["chunk_times"]) > 1]
    if not recs:
        raise Refused(f"{load()} c={c}: no request with two or more chunks: no step time")
    steps = [span / (len(r["chunk_times"]) - 1) for r in recs
             if (span := stats.stream_span(r)) is not None]  # every one: two or more chunks
    tokens = sum(r["output_tokens"] - 1 for r in recs) / sum(len(r["chunk_times"]) - 1
                                                          for r in recs)
    ttft = median(t for r in recs if (t := stats.ttft(r)) is not None)
    e2e = math.fsum(r["t_done"] - r["t_send"] for r in recs) / len(recs)
    thr = sum(r["output_tokens"] for p in points for r in p["records"]
              if not r["warmup"] and not r.get("error")) / math.fsum(p["wall_s"] for p in points)
    return {"step_s": median(steps), "tokens_per_step": tokens, "ttft_s": ttft,
            "throughput": thr, "eta": thr / (c * output_tokens / e2e)}


def check_sweep(plan: Plan) -> None:
    """Refuse before reading anything when the sweep cannot support a recommendation."""
    name = load()
    if name not in plan["instruments"]:
        raise Refused(f"no {name} instrument: nothing measured per concurrency")
    conc = plan["instruments"][name]["concurrency"]
    if len(conc) < MIN_POINTS:
        raise Refused(f"too few points: the {name} measured {len(conc)} concurrencies "
                      f"({conc}); a recommendation needs at least {MIN_POINTS}")


class SweepSession(SessionRaw):
    """A realized session's sweep window, as a recommendation reads it: its id and its raw
    file under "raw"["sweep"] (the shape hostfigures.host_speed reads)."""

    id: str


def sweep_windows(plan: Plan, root: Path,
                  named: Named | None = None) -> dict[tuple[int, str], SweepSession]:
    """Every realized session's sweep window, read once: {(pair, arm): {"id", "raw"}}, the raw
    under "raw"["sweep"] as hostfigures.host_speed takes sessions."""
    out: dict[tuple[int, str], SweepSession] = {}
    name, read = load(), reader(named)
    for s in realized_sessions(plan, root, named):  # protocol order
        raw_dir = Path(root) / layout.raw_dir(s["id"])
        raw = cast(RawFile, read(rawfiles.stored(raw_dir, f"{name}.json"), "raw"))
        out[(s["pair"], s["arm"])] = {"id": s["id"], "raw": {name: raw}}
    return out


def observations(plan: Plan, sweeps: dict[tuple[int, str], SweepSession]) -> list[Observation]:
    """One row per (session, concurrency), with the session's pair, arm and k there."""
    name = load()
    cfg = plan["instruments"][name]
    conc = cfg["concurrency"]
    rows: list[Observation] = []
    for (pair, arm), s in sweeps.items():
        for c, k in zip(conc, session_k(plan, arm, conc), strict=True):
            pts = [p for p in s["raw"][name]["points"] if p["point"] == c]
            rows.append(Observation(session=s["id"], pair=pair, arm=arm, c=c, k=k,
                                    **point_observation(pts, c, cfg["output_tokens"])))
    return rows


def fixed_at(plan: Plan, arm: str, horizon: int) -> bool:
    """Whether an arm drafts at the horizon whatever the batch size (no schedule below it)."""
    spec = plan["arms"][arm].get("speculative_config") or {}
    bands = spec.get("num_speculative_tokens_per_batch_size") or []
    return spec.get("num_speculative_tokens") == horizon and all(b[2] >= horizon for b in bands)


def acceptance_windows(plan: Plan, root: Path, horizon: int,
                       named: Named | None = None) -> list[AcceptanceWindow]:
    """The acceptance counters of every window (probe, sweep) of the arms that draft at the
    horizon at every batch size: a schedule's windows mix horizons under one drafts count. A
    window sampled where the engine does not sample as asked (sampling_withheld) is left out."""
    out: list[AcceptanceWindow] = []
    read = reader(named)
    for s in realized_sessions(plan, root, named):
        if not fixed_at(plan, s["arm"], horizon):
            continue
        for name in instruments.acceptance():
            path = Path(root) / layout.metrics(s["id"], name)
            if name not in plan["instruments"] or not path.exists():
                continue
            m = read(path)
            per_pos = m.get("spec_decode_num_accepted_tokens_per_pos") or []
            if len(per_pos) == horizon and m.get("spec_decode_num_drafts") \
                    and not m.get("sampling_withheld"):
                out.append({"pair": s["pair"], "file": layout.metrics(s["id"], name),
                            "drafts": m["spec_decode_num_drafts"], "accepted_per_pos": per_pos})
    return out


def pooled_rates(windows: Sequence[AcceptanceWindow]) -> list[float]:
    drafts = sum(w["drafts"] for w in windows)
    accepted = np.sum([w["accepted_per_pos"] for w in windows], axis=0)
    return speculation.position_rates(drafts, [float(a) for a in accepted])


def check_supported(plan: Plan, rows: list[Observation], windows: Sequence[AcceptanceWindow],
                    horizon: int) -> None:
    ks = sorted({r["k"] for r in rows})
    if horizon == 0:
        raise Refused("acceptance counters missing: speculation is off in both arms")
    if not windows:
        which = " or ".join(sorted(instruments.acceptance()))
        raise Refused(f"acceptance counters missing: no {which} window at k={horizon} "
                      "has per-position acceptance counts")
    if len(ks) < 2:
        raise Refused(f"one k only (k={ks[0]} at every measured point of both arms): the step "
                      "time cannot be separated from k")
    if not speculation.identifiable([(r["c"], r["k"]) for r in rows]):
        pts = sorted({(r["c"], r["k"]) for r in rows})
        raise Refused(f"the measured (concurrency, k) points {pts} cannot separate the step "
                      f"model's terms {', '.join(speculation.STEP_TERMS)}: measure a second k at "
                      "two or more concurrencies")


class AtConcurrency(TypedDict):
    """What the sessions measured at one concurrency, averaged: tokens per step by k."""
    tokens: dict[int, float]
    ttft_s: float
    eta: float


class Model:
    """Everything fitted from one set of sessions (all of them, or a resample of pairs)."""

    def __init__(self, rows: list[Observation], windows: Sequence[AcceptanceWindow],
                 output_tokens: int):
        self.rates = pooled_rates(windows)
        self.horizon = len(self.rates)
        self.step = speculation.fit_step_model([(r["c"], r["k"], r["step_s"]) for r in rows])
        self.n = output_tokens
        self.at: dict[int, AtConcurrency] = {}
        for c in sorted({r["c"] for r in rows}):
            here = [r for r in rows if r["c"] == c]
            self.at[c] = {"tokens": {k: float(np.mean([r["tokens_per_step"] for r in here
                                                       if r["k"] == k]))
                                     for k in {r["k"] for r in here}},
                          "ttft_s": float(np.mean([r["ttft_s"] for r in here])),
                          "eta": float(np.mean([r["eta"] for r in here]))}
        self.availability = self.draft_availability()

    def prefix_excess(self, c: int, k: int) -> float:
        """Tokens per step above one at k, scaled from the horizon measured at c by the
        accepted prefix alone: (T(K) - 1) sum(a_1..a_k) / sum(a_1..a_K)."""
        top = max(self.at[c]["tokens"])
        if top == 0:
            raise KneeError(f"c={c}: no speculating session to scale tokens per step from")
        excess = self.at[c]["tokens"][top] - 1.0
        return excess * math.fsum(self.rates[:k]) / math.fsum(self.rates[:top])

    def draft_availability(self) -> dict[int, float]:
        """gamma(k): measured tokens per step above one at a shorter horizon k against the
        accepted-prefix scaling, pooled over the concurrencies where both k and the longest
        horizon ran (an ngram drafter finds a full-length draft less often at a longer
        horizon). gamma(K) = 1; without a second horizon, 1 everywhere."""
        out = {self.horizon: 1.0}
        for k in sorted({k for at in self.at.values() for k in at["tokens"]}):
            ratios = [(at["tokens"][k] - 1.0) / self.prefix_excess(c, k)
                      for c, at in self.at.items()
                      if 0 < k < self.horizon and k in at["tokens"]
                      and max(at["tokens"]) == self.horizon and self.prefix_excess(c, k) > 0]
            if ratios:
                out[k] = float(np.mean(ratios))
        return out

    def gamma(self, k: int) -> float:
        """gamma at k: linear between the horizons measured, the nearest one beyond them."""
        known = sorted(self.availability)
        if k <= known[0]:
            return self.availability[known[0]]
        return float(np.interp(k, known, [self.availability[x] for x in known]))

    def tokens(self, c: int, k: int) -> float:
        if k == 0:
            return 1.0
        top = max(self.at[c]["tokens"])
        return 1.0 + self.prefix_excess(c, k) * self.gamma(k) / self.gamma(top)

    def predict(self, c: int, k: int) -> Figures:
        step, tokens = self.step(c, k), self.tokens(c, k)
        at = self.at[c]
        latency = at["ttft_s"] + (self.n - 1) * step / tokens
        return {"step_s": step, "tokens_per_step": tokens, "decode_rate": tokens / step,
                "throughput": at["eta"] * c * self.n / latency}


def candidate_ks(rows: list[Observation], horizon: int) -> list[int]:
    """k = 1..K, and 0 where a speculation-off session was measured."""
    return ([0] if any(r["k"] == 0 for r in rows) else []) + list(range(1, horizon + 1))


def resample_pairs(pairs: list[int], rng: np.random.Generator) -> list[int]:
    return list(rng.choice(pairs, size=len(pairs), replace=True))


def bootstrap(rows: list[Observation], windows: Sequence[AcceptanceWindow], n_tokens: int,
              conc: list[int], ks: list[int], seed: int = 0) -> Resamples:
    """Predictions over pair resamples: {(c, k): [throughput...]}, {(c, k): [decode...]}, the
    i-th value of every list from the same resample."""
    rng = np.random.default_rng(seed)
    pairs = sorted({r["pair"] for r in rows})
    thr: dict[tuple[int, int], list[float]] = {(c, k): [] for c in conc for k in ks}
    dec: dict[tuple[int, int], list[float]] = {(c, k): [] for c in conc for k in ks}
    for _ in range(RESAMPLES):
        picks = resample_pairs(pairs, rng)
        sub = [r for p in picks for r in rows if r["pair"] == p]
        subw = [w for p in picks for w in windows if w["pair"] == p]
        if not subw or not speculation.identifiable([(r["c"], r["k"]) for r in sub]):
            continue
        m = Model(sub, subw, n_tokens)
        for c in conc:
            preds = {k: m.predict(c, k) for k in ks}
            for k in ks:
                thr[(c, k)].append(preds[k]["throughput"])
                dec[(c, k)].append(preds[k]["decode_rate"])
    return {"throughput": thr, "decode_rate": dec}


def build(plan: Plan, root: Path, named: Named | None = None) -> Recommendation:
    """The recommendation (raises Refused with the reason when the data cannot support one),
    from the folder's files (with `named`, only those named)."""
    check_sweep(plan)
    sweeps = sweep_windows(plan, root, named)
    rows = observations(plan, sweeps)
    horizon = max(r["k"] for r in rows)
    windows = acceptance_windows(plan, root, horizon, named)
    check_supported(plan, rows, windows, horizon)
    cfg = plan["instruments"][load()]
    n_tokens, conc = cfg["output_tokens"], cfg["concurrency"]
    model = Model(rows, windows, n_tokens)
    ks = candidate_ks(rows, horizon)
    boot = bootstrap(rows, windows, n_tokens, conc, ks)
    rec = parts.assemble(plan, rows, windows, model, ks, boot)
    speed = sweep_speed(plan, sweeps)
    return {**rec, "sweep_cpu_speed": speed} if speed else rec


def sweep_speed(plan: Plan, sweeps: dict[tuple[int, str], SweepSession]) -> float | None:
    """The median speed of the engine's CPU over the sweep windows (None before it was sampled):
    a verification run measured on a faster or slower host says by how much."""
    return hostfigures.instrument_speed(hostfigures.host_speed(plan, sweeps), load())
