"""Validate that the two arms saw the same requests, then compute deltas (pure).

No delta is computed unless every request profile, prompt fingerprint, model hash and
engine version matches, and the resolved servers differ only in the declared variable.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from knee import instruments
from knee.analyze import (
    inference,
    latency,
    noise,
    resolved,
    samework,
    sampling,
    together,
    verification,
)
from knee.analyze.adjust import covariate
from knee.analyze.folder import Sessions
from knee.analyze.stats import decode_rate, fmean, gmean, mean, pct, point_summary
from knee.analyze.window import held, prom
from knee.core import metrics
from knee.core.records import (
    BarRule,
    Comparison,
    ComparisonRow,
    LoadedSession,
    Plan,
    Point,
    RawFile,
    Recommendation,
    RowInterval,
    SessionRaw,
)
from knee.core.records.engine import EngineSide
from knee.plan.arms import differences, in_variable, shown_variable

METRICS = metrics.NAMES  # knee.core.metrics declares each
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


# a point's figures: each metric's value (None where the window gives none), and errors
Figures = dict[str, float | None]


def arm_figures(raw: RawFile,
                withheld: Mapping[float | str, str] | None = None) -> dict[Point, Figures]:
    """Per point: the mean over runs of each run's figures, plus a fixture-wide 'all'; a point
    sampled where an engine of the experiment does not sample as asked has none
    (knee.analyze.sampling.withheld)."""
    by_point: dict[Point, list[dict[str, Any]]] = {}
    points = [p for p in raw["points"] if not sampling.point_reason(withheld or {}, p)]
    raw = {**raw, "points": points}
    for p in raw["points"]:
        by_point.setdefault(p["point"], []).append(point_summary(p))
    out: dict[Point, Figures] = {}
    for point, runs in by_point.items():
        out[point] = {m: mean([r[m] for r in runs]) for m in METRICS}
        out[point]["errors"] = sum(r["errors"] for r in runs)
        # paired over requests: the geometric mean over every run's requests at once
        out[point]["decode_rate_gmean"] = gmean([
            decode_rate(r) for p in raw["points"] if p["point"] == point
            for r in p["records"] if not r["warmup"]])
    if instruments.get(raw["instrument"]).pools:
        recs = [r for p in raw["points"] for r in p["records"] if not r["warmup"]]
        rates = [decode_rate(r) for r in recs]
        out["all"] = {"decode_rate_p50": pct(rates, 50), "decode_rate_gmean": gmean(rates),
                      "throughput": None, "ttft_p50": None, "errors": 0}
    return out


def delta_pct(control: float | None, candidate: float | None) -> float | None:
    if control in (None, 0) or candidate is None:
        return None
    return 100.0 * (candidate - control) / control


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


FOREIGN_BUSY = 0.10  # the load generator's CPUs busy with other work beyond this: flagged
STEAL = 0.02  # the hypervisor took more than this share of a CPU: flagged


def host_flags(sessions: Sessions) -> list[str]:
    """Windows measured while the host did other work (from the facts in each raw file)."""
    out = []
    for (pair, arm), s in sorted(sessions.items()):
        for inst, raw in s["raw"].items():
            host = raw.get("host") or {}
            foreign = host.get("client_cpus_foreign_busy")
            steal = max((c["steal"] for c in host.get("cpus", {}).values()), default=0.0)
            if foreign is not None and foreign > FOREIGN_BUSY:
                out.append(f"{pair}-{arm}/{inst}: the load generator's CPUs were "
                           f"{100 * foreign:.0f}% busy with other work during the window")
            if steal > STEAL:
                out.append(f"{pair}-{arm}/{inst}: the hypervisor stole {100 * steal:.1f}% of a "
                           "CPU during the window")
    return out


def host_speed(plan: Plan, sessions: Mapping[tuple[int, str], SessionRaw]) -> dict[str, Any] | None:
    """How fast the engine's CPUs ran during each window (the median of the samples taken
    while it ran, knee.measure.host.speed), their spread, and per bar rule the correlation over
    boots between that speed and the rule's figure, each arm's figures taken relative to the
    arm's mean. None where no window was sampled (an older run, or no engine CPUs configured)."""
    cpus = [f"cpu{c}" for c in plan.get("runtime", {}).get("engine_cpus") or []]

    def speed(host: Mapping[str, Any]) -> float | None:
        during = host.get("cpu_speed_during") or {}
        values = [during[c]["median"] for c in cpus if c in during]
        return mean(values) if values else None

    found = per_window(plan, sessions, speed, "speed")
    return found and {"cpus": cpus, "method": noise.SPEED_METHOD, **found}


def gpu_clocks(plan: Plan, sessions: Sessions) -> dict[str, Any] | None:
    """The GPUs' SM clock during each window (the median of the samples, knee.measure.host.gpu;
    the mean over the GPUs), its spread, the throttle reasons seen, and per bar rule the correlation
    over boots between that clock and the rule's figure. None where no window was sampled."""
    def clock(host: Mapping[str, Any]) -> float | None:
        values = [g["sm_clock_mhz"]["median"] for g in (host.get("gpu_during") or {}).values()
                  if "sm_clock_mhz" in g]
        return mean(values) if values else None

    found = per_window(plan, sessions, clock, "sm_clock_mhz")
    if not found:
        return None
    reasons = sorted({r for s in sessions.values() for raw in s["raw"].values()
                      for g in ((raw.get("host") or {}).get("gpu_during") or {}).values()
                      for r, share in g.get("reasons", {}).items() if share > 0})
    return {"gpus": plan.get("runtime", {}).get("gpus"), "reasons_seen": reasons, **found}


def per_window(plan: Plan, sessions: Mapping[tuple[int, str], SessionRaw],
               pick: Callable[[Mapping[str, Any]], float | None],
               name: str) -> dict[str, Any] | None:
    """One figure of each window's host facts (pick(host) -> value or None), its range and
    spread, and per bar rule how closely the rule's figure followed it over the boots."""
    values: dict[tuple[int, str, str], float] = {}
    for (pair, arm), s in sorted(sessions.items()):
        for inst, raw in sorted(s["raw"].items()):
            got = pick(raw.get("host") or {})
            if got is not None:
                values[(pair, arm, inst)] = got
    if not values:
        return None
    follows = [f for rule in plan.get("bar", {}).get("rules", [])
               if (f := follows_speed(rule, sessions, values))]
    return {"windows": [{"session": f"{p}-{a}", "instrument": i, name: round(v, 2)}
                        for (p, a, i), v in values.items()],
            "range": [round(min(values.values()), 2), round(max(values.values()), 2)],
            "spread_pct": round(noise.spread_pct(list(values.values())) or 0.0, 1),
            "rules": follows}


def instrument_speed(speed: dict[str, Any] | None, instrument: str) -> float | None:
    """The median engine-CPU speed over one instrument's windows of a host_speed summary."""
    values = [w["speed"] for w in (speed or {}).get("windows", []) if w["instrument"] == instrument]
    return round(statistics.median(values), 2) if values else None


def follows_speed(rule: BarRule, sessions: Mapping[tuple[int, str], SessionRaw],
                  speeds: Mapping[tuple[int, str, str], float]) -> dict[str, Any] | None:
    """The correlation over boots between the engine CPU's speed in the rule's window and the
    rule's figure relative to its arm's mean (so the arms' difference does not count)."""
    xs, ys = [], []
    for arm in ("control", "candidate"):
        got = []
        for (pair, a), s in sorted(sessions.items()):
            raw, key = s["raw"].get(rule["instrument"]), (pair, a, rule["instrument"])
            if a == arm and raw and key in speeds:
                figure = arm_figures(raw).get(rule["point"], {}).get(rule["metric"])
                if figure:
                    got.append((speeds[key], figure))
        xs += [x for x, _ in got]
        ys += [y / fmean([v for _, v in got]) for _, y in got]
    if len(xs) < 4 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return {"rule": rule["name"], "boots": len(xs),
            "correlation": round(statistics.correlation(xs, ys), 3)}


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
    tail = {"interval_method": inference.METHOD, "noise_method": NOISE_METHOD,
            "host_flags": host_flags(sessions),
            **({"host_speed": speed} if (speed := host_speed(plan, sessions)) else {}),
            **({"gpu": clocks} if (clocks := gpu_clocks(plan, sessions)) else {}),
            **(covariate.section(plan, sessions) if not bad else {}),
            **engine_side(plan, sessions), **samework.section(sessions),
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
