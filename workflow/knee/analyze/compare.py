"""Validate that the two arms saw the same requests, then compute deltas (pure).

No delta is computed unless every request profile, prompt fingerprint, model hash and
engine version matches, and the resolved servers differ only in the declared variable.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from knee import instruments
from knee.analyze import (
    inference,
    latency,
    noise,
    requestsplit,
    resolved,
    samework,
    sampling,
    together,
    verification,
)
from knee.analyze.adjust import covariate
from knee.analyze.armfigures import METRICS, arm_figures, delta_pct
from knee.analyze.folder import Sessions
from knee.analyze.hostfigures import gpu_clocks, host_flags, host_speed, instrument_speed
from knee.analyze.stats import decode_rate, mean
from knee.analyze.window import held, prom
from knee.core.records import (
    Comparison,
    ComparisonRow,
    LoadedSession,
    Plan,
    Point,
    RawFile,
    Recommendation,
    RowInterval,
)
from knee.core.records.engine import EngineSide
from knee.plan.arms import differences, in_variable, shown_variable

NOISE_METHOD = ("noise_pct is the largest of the run-to-run spread of either arm at the point "
                "and the control's spread across its boots. A per-pair row's interval is a "
                "bootstrap over requests (2000 resamples, seeded) of the delta of the p50 "
                "(decode rate, TTFT) or, for throughput, of the mean per-request rate (closed "
                "loop: throughput ~ concurrency x mean per-request rate) centred on the "
                "aggregate delta.")


def _profiles(raw: RawFile) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {(raw["instrument"], p["point"], p["run"]): p["profile"] for p in raw["points"]}


def validate_pair(pair: int, control: LoadedSession, candidate: LoadedSession,
                  variable: str | list[str]) -> tuple[list[Any], list[Any]]:
    """control/candidate: {"boot": receipt, "raw": {instrument: raw}}. Returns (checked, bad)."""
    checked: list[str] = []
    bad: list[dict[str, Any]] = []

    def cmp(where: str, field: str, a: object, b: object, kind: str = "boot") -> None:
        checked.append(f"{where}:{field}")
        if a != b:
            bad.append({"where": where, "field": field, "control": a, "candidate": b,
                        "files": [control.get("files", {}).get(kind),
                                  candidate.get("files", {}).get(kind)]})

    for inst in sorted(set(control["raw"]) | set(candidate["raw"])):
        pa = _profiles(control["raw"][inst]) if inst in control["raw"] else {}
        pb = _profiles(candidate["raw"][inst]) if inst in candidate["raw"] else {}
        for key in sorted(set(pa) | set(pb), key=str):
            where = f"pair {pair} {key[0]} point={key[1]} run={key[2]}"
            if key not in pa or key not in pb:
                cmp(where, "present", key in pa, key in pb, inst)
                continue
            for field in sorted(set(pa[key]) | set(pb[key])):
                cmp(where, field, pa[key].get(field), pb[key].get(field), inst)
    ba, bb = control["boot"], candidate["boot"]
    where = f"pair {pair} boot receipts"
    cmp(where, "model.sha256", ba["model"].get("sha256"), bb["model"].get("sha256"))
    cmp(where, "engine.packages", ba["engine"]["packages"], bb["engine"]["packages"])
    cmp(where, "runtime", ba["runtime"], bb["runtime"])
    for setting, a, b in differences(ba["server"], bb["server"]):
        if not in_variable(setting, variable):
            cmp(where, f"server.{setting}", a, b)
    checked.append(f"{where}:server (all but {shown_variable(variable)})")
    return checked, bad


# (instrument, point, metric): one figure of a window
FigureKey = tuple[str, Point, str]


@dataclass(frozen=True)
class Cell:
    """One figure of the comparison: an instrument's point and metric, each pair's (control,
    candidate) figures, and the arms' means over those pairs."""
    instrument: str
    point: Point
    metric: str
    per_pair: list[tuple[float | None, float | None]]
    control: float | None
    candidate: float | None

    @property
    def key(self) -> FigureKey:
        return self.instrument, self.point, self.metric


def cells(pairs: list[tuple[LoadedSession, LoadedSession]],
          pooled: Mapping[float | str, str]) -> Iterator[Cell]:
    """Every figure either arm has, over the pairs given. pooled: what an arm's pooled
    sampling check withholds, in every pair."""
    gone: dict[float | str, str] = dict(pooled)
    for session in (s for pair in pairs for s in pair):
        gone |= sampling.withheld(session["boot"])
    for inst in sorted(pairs[0][0]["raw"]):
        figs = [(arm_figures(c["raw"][inst], gone), arm_figures(d["raw"][inst], gone))
                for c, d in pairs]
        for point in figs[0][0]:
            for m in METRICS:
                a = mean([fa[point][m] for fa, _ in figs])
                b = mean([fb[point][m] for _, fb in figs])
                if a is not None or b is not None:
                    yield Cell(inst, point, m, [(fa[point][m], fb[point][m]) for fa, fb in figs],
                               a, b)


def rows_for_pair(pair: int, control: LoadedSession, candidate: LoadedSession,
                  drift: Mapping[FigureKey, float | None], seed: int,
                  confidence: float, pooled: Mapping[float | str, str]) -> list[ComparisonRow]:
    rows = []
    spread = {(inst, m): (noise.run_spread(control["raw"][inst], m),
                          noise.run_spread(candidate["raw"][inst], m))
              for inst in control["raw"] for m in METRICS}
    for c in cells([(control, candidate)], pooled):
        inst, point, m = c.key
        ra, rb = control["raw"][inst], candidate["raw"][inst]
        spreads = [spread[inst, m][0].get(point), spread[inst, m][1].get(point),
                   drift.get(c.key)]
        delta = delta_pct(c.control, c.candidate)
        interval = inference.within_pair_interval(
            noise.requests_of(ra, point), noise.requests_of(rb, point), m, seed,
            centre=delta if m == "throughput" else None, confidence=confidence)
        rows.append(row(c, pair, spreads, delta,
                        {"interval": interval, "interval_level": inference.REQUESTS,
                         "confidence": confidence}))
    return rows


def row(c: Cell, pair: int | str, spreads: list[float | None], delta: float | None,
        interval: RowInterval) -> ComparisonRow:
    """A comparison row: one pair's (or, pair "all", every pair's) effect on one figure."""
    measured = [s for s in spreads if s is not None]
    floor = max(measured) if measured else None
    return {"instrument": c.instrument, "point": c.point, "pair": pair, "metric": c.metric,
            "control": c.control, "candidate": c.candidate, "delta_pct": delta,
            "noise_pct": floor, **interval, "noise": noise.noise_label(delta, floor, interval)}


def control_drift(controls: list[LoadedSession]) -> dict[FigureKey, float | None]:
    """Spread of the control's figure across its boots, per (instrument, point, metric)."""
    out: dict[FigureKey, float | None] = {}
    figures: dict[FigureKey, list[float | None]] = {}
    for s in controls:
        for inst, raw in s["raw"].items():
            for point, f in arm_figures(raw).items():
                for m in METRICS:
                    figures.setdefault((inst, point, m), []).append(f[m])
    for key, values in figures.items():
        out[key] = noise.spread_pct(values)
    return out


def across_pairs(pairs: list[tuple[LoadedSession, LoadedSession]],
                 drift: Mapping[FigureKey, float | None],
                 confidence: float, pooled: Mapping[float | str, str]) -> list[ComparisonRow]:
    """One row per instrument, point and metric: the effect over boot pairs with its t
    interval (knee.analyze.inference), the arms' mean figures beside it for reading."""
    rows = []
    for c in cells(pairs, pooled):
        ratios = [inference.log_ratio(x, y) for x, y in c.per_pair]
        eff = inference.effect(ratios)
        interval: RowInterval = {"interval": eff.interval_pct(confidence) if eff else None,
                    "interval_level": inference.PAIRS, "confidence": confidence,
                    "pairs": eff.n if eff else 0,
                    "per_pair_delta_pct": [x if x is None else inference.to_pct(x)
                                           for x in ratios]}
        rows.append(row(c, "all", [drift.get(c.key)],
                        inference.to_pct(eff.mean) if eff else None, interval))
    return rows


@dataclass(frozen=True)
class Windows:
    """One instrument's raw windows, as its derived sections (knee.instruments.Derived) take
    them: every session's, {(pair, arm): raw}, and the pairs', [(control, candidate)] from pair
    1 on, with the figures the comparison's rows are made of."""
    sessions: dict[tuple[int, str], RawFile]
    pairs: list[tuple[RawFile, RawFile]]
    figures = staticmethod(arm_figures)
    delta_pct = staticmethod(delta_pct)
    decode_rate = staticmethod(decode_rate)


def windows(instrument: str, sessions: Sessions) -> Windows:
    n = max(pair for pair, _ in sessions)
    return Windows(
        sessions={k: s["raw"][instrument] for k, s in sessions.items()},
        pairs=[(sessions[(p, "control")]["raw"][instrument],
                sessions[(p, "candidate")]["raw"][instrument]) for p in range(1, n + 1)])


def derived(sessions: Sessions, valid: bool) -> dict[str, list[Any]]:
    """Every registered instrument's derived sections (empty where it did not run, or where
    the arms did not measure the same requests)."""
    ran = set(next(iter(sessions.values()))["raw"])
    return {section.key: section.derive(windows(name, sessions)) if valid and name in ran
            else [] for name, section in instruments.derived()}


def compare(plan: Plan, sessions: Sessions,
            prediction: Recommendation | None = None) -> Comparison:
    """sessions[(pair, arm)] = {"boot": ..., "raw": {...}}: comparison.json's record (its
    schema validates it as it is written; the instruments' derived sections among its keys);
    a verification run's registered prediction (its recommendation) gives its prediction."""
    checked, bad = [], []
    n = max(pair for pair, _ in sessions)  # the pairs that ran (stopping by precision: fewer)
    for pair in range(1, n + 1):
        checks, found = validate_pair(pair, sessions[(pair, "control")],
                                      sessions[(pair, "candidate")], plan["variable"])
        checked += checks
        bad += found
    rows = []
    pools = sampling.arm_pools(sessions)
    if not bad:
        pooled = sampling.pooled_withheld(pools["control"]) | \
            sampling.pooled_withheld(pools["candidate"])
        pairs = [(sessions[(p, "control")], sessions[(p, "candidate")]) for p in range(1, n + 1)]
        drift = control_drift([c for c, _ in pairs])
        seed = plan["instruments"]["seed"]
        confidence = plan["analysis"]["confidence"]
        for pair, (c, d) in enumerate(pairs, start=1):
            rows += rows_for_pair(pair, c, d, drift, seed, confidence, pooled)
        rows += across_pairs(pairs, drift, confidence, pooled)
    # a server knee booted serves only knee's requests: its counters and the raw records agree
    booted = (plan.get("runtime") or {}).get("kind") != "external"
    counters = prom.counter_disagreements(sessions) if booted else []
    head = {"experiment": plan["name"], "verdict": "INVALID" if bad or counters else "VALID",
            "variable": plan["variable"], "fields_checked": checked, "mismatches": bad,
            "rows": rows}
    tail: dict[str, Any] = {
        "interval_method": inference.METHOD, "noise_method": NOISE_METHOD,
        "host_flags": host_flags(sessions),
        **({"host_speed": speed} if (speed := host_speed(plan, sessions)) else {}),
        **({"gpu": clocks} if (clocks := gpu_clocks(plan, sessions)) else {}),
        **(covariate.section(plan, sessions) if not bad else {}),
        **engine_side(plan, sessions), **samework.section(sessions),
        **requestsplit.section(sessions),
        **held.section(sessions), **latency.section(sessions),
        **sampling.section(instruments.sampled_temperatures(plan["instruments"]),
                           sessions, pools),
        **together.section(plan, sessions),
        **({"counter_disagreements": counters} if counters else {})}
    sections = derived(sessions, valid=not bad)
    if clash := sorted(set(sections) & (set(head) | set(tail) | {"schema", "schema_version"})):
        raise ValueError(f"an instrument's derived section takes the comparison's own key "
                         f"{clash[0]!r}")
    out = {**head, **sections, **tail}
    if prediction is not None and not bad:  # a verification run: its registered prediction
        out["prediction"] = verification.section(plan, out, prediction, instrument_speed(
            out.get("host_speed"), instruments.role(instruments.LOAD)))
    return cast(Comparison, out)


def engine_side(plan: Plan, sessions: Sessions) -> EngineSide:
    """What the engine resolved, compared between the arms (boots that recorded it only), and
    where requests may end at end-of-sequence, the lengths it generated."""
    boots = [s["boot"] for s in sessions.values()]
    lengths = resolved.length_differences(sessions)
    if not any(b.get("engine_resolved") for b in boots) and not lengths:
        return {}
    return {"engine_differences": resolved.differences(plan["variable"], boots) + lengths}
