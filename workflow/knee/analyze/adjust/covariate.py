"""The host speed a bar figure was measured at, and a rule's effect adjusted for it (pure).

knee.measure.host.speed samples how fast each CPU runs. A figure's speed is taken over the
figure's own span: the mean over the engine's CPUs (every sampled CPU where the engine is not
pinned) of each CPU's median, per run of the point where the runs recorded it (the geometric
mean over the runs, as the figure is the mean over them), else over the whole window (folders
measured before runs recorded it, and a figure pooled over the window's points).

The adjustment is the one registered with the bar (bar.adjust, its slopes from a calibration
A/A, knee.analyze.adjust.calibration): each pair's effect is log(candidate / control) minus the
slope times log(candidate speed / control speed), judged by the same t interval over pairs. A
slope fitted on the experiment's own pairs with that interval is not calibrated; only a
registered one is used. Beside every adjusted rule: the balance check (the arms' mean log speed
difference with its interval). The adjustment applies only where balance is shown: the interval
lies inside ±the registered tolerance (equivalence, the burden of proof on balance); anywhere
else an arm may have moved the covariate, so the rule is judged as measured and says why.

With bar.adjust.covariate idle_speed the covariate is the CPUs' speed over the probe each boot
takes with its engine booted and idle, before its first window (knee.measure.host.speed
.idle_probe): one per boot, shared by every figure of it, which no request of the arm moves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from knee.analyze import inference
from knee.analyze.folder import Sessions
from knee.analyze.stats import fmean, mean
from knee.core.records import BarRule, BootReceipt, LoadedSession, Plan, RawFile
from knee.core.records.covariate import (
    Balance,
    Contrast,
    ContrastSection,
    CovariateRow,
    CovariateSection,
    CpuSpeed,
)
from knee.plan.adjust import HOST_SPEED, IDLE_SPEED, covariate_of

COVARIATE = HOST_SPEED  # the covariate of a bar that names none (before idle_speed)
SPEED_OF_FIGURE = ("the mean over the engine CPUs (every sampled CPU where the engine is not "
                   "pinned) of each CPU's median sampled speed, over each run of the figure's "
                   "point (geometric mean over runs), else over the window")
SPEED_IDLE = ("the mean over the engine CPUs (every sampled CPU where the engine is not pinned) "
              "of each CPU's median sampled speed over the boot's idle probe (the engine booted, "
              "no request in flight, before its first window): one per boot, every figure's")
METHODS = {HOST_SPEED: SPEED_OF_FIGURE, IDLE_SPEED: SPEED_IDLE}


def cpu_names(plan: Plan) -> list[str]:
    """The CPUs whose speed counts: the engine's, where the plan pins it (else all sampled)."""
    return [f"cpu{c}" for c in (plan.get("runtime") or {}).get("engine_cpus") or []]


def summary_speed(summary: Mapping[str, CpuSpeed] | None, cpus: list[str]) -> float | None:
    """The mean over `cpus` (all in the summary where empty) of each CPU's median speed."""
    summary = summary or {}
    values = [s["median"] for c, s in summary.items() if (c in cpus or not cpus)
              and isinstance(s, dict) and (s.get("median") or 0) > 0]
    return mean(values) if values else None


def figure_speed(raw: RawFile, point: object, cpus: list[str]) -> tuple[float | None, str]:
    """(speed, over what) for one figure of a window: 'runs' or 'window'."""
    if str(point) != "all":
        runs = [summary_speed(p.get("cpu_speed"), cpus) for p in raw["points"]
                if str(p["point"]) == str(point)]
        known = [r for r in runs if r]
        if runs and len(known) == len(runs):
            return math.exp(fmean([math.log(r) for r in known])), "runs"
    return summary_speed((raw.get("host") or {}).get("cpu_speed_during"), cpus), "window"


def idle_speed(boot: BootReceipt, cpus: list[str]) -> float | None:
    """A boot's speed over its idle probe (None where it took none)."""
    probe = boot.get("idle_speed")
    return summary_speed(probe.get("cpu_speed") if probe else None, cpus)


def session_speed(session: LoadedSession, rule: BarRule, cpus: list[str],
                  name: str) -> tuple[float | None, str]:
    """(speed, over what) of a rule's figure in one session, for the covariate `name`."""
    if name == IDLE_SPEED:
        return idle_speed(session["boot"], cpus), "idle"
    return figure_speed(session["raw"][rule["instrument"]], rule["point"], cpus)


def pair_rows(plan: Plan, sessions: Sessions, pairs: int, name: str) -> list[CovariateRow]:
    """Per bar rule and pair: each arm's speed for the rule's figure on the covariate `name`
    (the comparison's covariate section, which the bar reads)."""
    cpus = cpu_names(plan)
    out: list[CovariateRow] = []
    for rule in plan["bar"]["rules"]:
        for pair in range(1, pairs + 1):
            got = {arm: session_speed(sessions[(pair, arm)], rule, cpus, name)
                   for arm in ("control", "candidate")}
            out.append({"rule": rule["name"], "pair": pair,
                        "control": _round(got["control"][0]),
                        "candidate": _round(got["candidate"][0]),
                        "over": sorted({over for _, over in got.values()})[-1]})
    return out


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def section(plan: Plan, sessions: Sessions) -> dict[str, CovariateSection]:
    """The comparison's covariate section where the bar registers an adjustment, else none."""
    if not (name := covariate_of(plan)):
        return {}
    pairs = max(pair for pair, _ in sessions)
    return {"covariate": {"name": name, "method": METHODS[name],
                          "cpus": cpu_names(plan) or "all sampled",
                          "rows": pair_rows(plan, sessions, pairs, name)}}


def name_of(comparison: Mapping[str, Any]) -> str:
    """The covariate a comparison's covariate section holds (host_speed where it has none)."""
    return str((comparison.get("covariate") or {}).get("name", COVARIATE))


def speed_ratios(comparison: Mapping[str, Any], rule: BarRule,
                 pairs: int) -> list[float | None]:
    """log(candidate speed / control speed) of the rule's figure in each pair."""
    rows = {r["pair"]: r for r in (comparison.get("covariate") or {}).get("rows", [])
            if r["rule"] == rule["name"]}
    return [inference.log_ratio(rows[p]["control"], rows[p]["candidate"]) if p in rows else None
            for p in range(1, pairs + 1)]


def balance(ratios: list[float], confidence: float) -> Balance:
    """The arms' mean log speed difference over the pairs, in percent, with its interval."""
    eff = inference.effect(ratios)
    interval = eff.interval_pct(confidence) if eff else None
    return {"estimate_pct": round(inference.to_pct(eff.mean), 3) if eff else None,
            "interval": [round(v, 3) for v in interval] if interval else None}


def balanced(check: Balance, tolerance_pct: float) -> bool:
    """The balance check shows the arms' host speed alike: its whole interval inside
    ±tolerance (equivalence, as a parity rule; an interval that cannot show it, too wide or
    absent, withholds the adjustment)."""
    if not (lo_hi := check["interval"]):
        return False
    return -tolerance_pct <= lo_hi[0] and lo_hi[1] <= tolerance_pct


def contrasts(comparison: Mapping[str, Any], rules: list[BarRule], pairs: int,
              confidence: float, tolerance_pct: float) -> ContrastSection | None:
    """The arm contrast of the covariate across the bar's figures: per pair, the arms' log
    speed difference over one figure's span less that over another's. A host state the change
    does not touch moves both arms' speeds alike in every span, so the contrast is zero; a
    change that loads the host differently under different instruments (its engine busier in
    one window, idler in another) moves it. Shown zero (each contrast's interval inside
    ±tolerance) or not; not shown, the adjustment is withheld from every rule. None where the
    figures share one span (one figure, or their speed over the same window and point), and
    for the idle probe (one per boot, before any window: no instrument of the arm ran in it)."""
    if name_of(comparison) == IDLE_SPEED:
        return None
    spans: dict[tuple[str, str], tuple[str, list[float]]] = {}
    for rule in rules:
        ratios = speed_ratios(comparison, rule, pairs)
        if None not in ratios:
            spans.setdefault((rule["instrument"], str(rule["point"])),
                             (rule["name"], [x for x in ratios if x is not None]))
    names = list(spans.values())
    found: list[Contrast] = []
    for i, (a, xa) in enumerate(names):
        for b, xb in names[i + 1:]:
            check = balance([p - q for p, q in zip(xa, xb, strict=True)], confidence)
            found.append(Contrast(rules=[a, b], **check,
                                  shown_zero=balanced(check, tolerance_pct)))
    if not found:
        return None
    return {"tolerance_pct": tolerance_pct, "contrasts": found,
            "shown_zero": all(c["shown_zero"] for c in found)}


def adjusted(effects: list[float], ratios: list[float], slope: float) -> list[float]:
    """Each pair's effect less the registered slope times its log speed ratio."""
    return [e - slope * x for e, x in zip(effects, ratios, strict=True)]


def used_effects(rule: BarRule, verdict: Mapping[str, Any],
                 comparison: Mapping[str, Any]) -> tuple[list[float], list[float]]:
    """A judged rule's per-pair effects (log ratios) as measured and as its verdict used them
    (adjusted where the adjustment was applied); a judged rule has a figure in every pair."""
    measured = [x for p in verdict["per_pair"]
                if (x := inference.log_ratio(p["control"], p["candidate"])) is not None]
    adjustment = verdict.get("adjustment") or {}
    if not adjustment.get("applied"):
        return measured, measured
    ratios = speed_ratios(comparison, rule, len(verdict["per_pair"]))
    return measured, adjusted(measured, [x for x in ratios if x is not None],
                              adjustment["slope"])
