"""A calibration: how each bar figure follows the host's speed, measured on A/A folders.

`knee calibrate results/AA ...` reads one or more A/A folders (any folder serves: each arm's
boots are a group of identical servers) and writes, per bar figure, the slope of the log figure
on the log host speed (knee.analyze.adjust.covariate: the figure's own span), the between-boot noise
before and after the adjustment, in sample and leaving each boot out (the slope and the group's
mean re-estimated without it: what a registered slope does to a boot it never saw), the
run-to-run and between-boot components the protocol planner needs, the costs of a session, and
the facts the calibration holds for (model, engine, GPU and CPUs). A config registers one with
bar.adjust; one made on another model, engine or host is refused, naming the fact.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from knee import instruments
from knee.analyze import armfigures, sampling
from knee.analyze.adjust import covariate
from knee.analyze.folder import load_sessions, load_stops
from knee.analyze.stats import fmean, mean, point_summary
from knee.core import folderscan, jsonio, layout
from knee.core.errors import KneeError
from knee.core.records import BarRule, BootReceipt, LoadedSession, Plan, RawFile, StopReceipt
from knee.core.records.calibration import (
    Calibration,
    Costs,
    Facts,
    Figure,
    Fit,
    RunComponents,
    Withheld,
)
from knee.plan.adjust import HOST_SPEED, IDLE_SPEED, covariate_cpus, differing, engine_name, key


class SessionCost(TypedDict):
    """What one session took (cost)."""

    boot_s: float
    warm: bool
    session_s: float | None
    runs: dict[str, list[float]]


class Boot(TypedDict):
    """One session of a folder as a calibration reads it (folder_boots)."""

    folder: str
    root: Path
    boot: BootReceipt
    plan: Plan
    session: str
    withheld: sampling.Withheld
    group: tuple[str, str]
    facts: Facts
    raw: dict[str, RawFile]
    cost: SessionCost


class BootFigure(TypedDict):
    """One boot's (log covariate, log figure), what the covariate was taken over, and each
    run's pair where every run has one (boot_figure)."""

    x: float
    y: float
    over: str
    runs: list[tuple[float, float]]


def boot_facts(boot: BootReceipt, plan: Plan) -> Facts:
    """What a calibration holds for (knee.plan.adjust.FACTS), as a boot receipt and its plan
    state it."""
    hw = boot.get("hardware") or {}
    return {"covariate_cpus": covariate_cpus(plan.get("runtime")),
            "model": (boot.get("model") or {}).get("name"),
            "engine": engine_name((boot.get("engine") or {}).get("packages")),
            "gpu": ", ".join(sorted({g.get("name", "?") for g in hw.get("nvml") or []}))
            or "none",
            "cpu_model": hw.get("cpu_model"), "cpus": hw.get("cpus")}


def _centred(groups: list[list[tuple[float, float]]]) -> list[tuple[float, float]]:
    out = []
    for g in groups:
        mx, my = fmean([x for x, _ in g]), fmean([y for _, y in g])
        out += [(x - mx, y - my) for x, y in g]
    return out


def _slope(groups: list[list[tuple[float, float]]]) -> float:
    c = _centred(groups)
    sxx = math.fsum(x * x for x, _ in c)
    return math.fsum(x * y for x, y in c) / sxx if sxx > 0 else 0.0


def _left_out(groups: list[list[tuple[float, float]]],
              slope_of: Callable[[list[list[tuple[float, float]]]], float]) -> list[float]:
    """Each boot's error predicted from the others (its group's mean and a slope re-estimated
    without it), scaled by (n-1)/n to a boot's own variance."""
    errors = []
    for gi, g in enumerate(groups):
        for i, (x, y) in enumerate(g):
            rest = g[:i] + g[i + 1:]
            others = [h for hi, h in enumerate(groups) if hi != gi] + [rest]
            b = slope_of(others)
            pred = fmean([v for _, v in rest]) + b * (x - fmean([u for u, _ in rest]))
            errors.append((y - pred) ** 2 * (len(g) - 1) / len(g))
    return errors


def fit(groups: list[list[tuple[float, float]]]) -> Fit:
    """Slope of y on x within groups of boots (logs), and the noise left with and without it."""
    groups = [g for g in groups if len(g) >= 2]
    n, k = sum(map(len, groups)), len(groups)
    if n - k < 2:
        raise KneeError(f"a calibration needs at least two more boots than groups (each arm of "
                        f"a folder is one group of identical servers): {n} boots in {k} groups")
    b = _slope(groups)
    c = _centred(groups)
    ss0, ss1 = math.fsum(y * y for _, y in c), math.fsum((y - b * x) ** 2 for x, y in c)
    sxx = math.fsum(x * x for x, _ in c)
    lobo0 = fmean(_left_out(groups, lambda gs: 0.0))
    lobo1 = fmean(_left_out(groups, _slope))
    return {"boots": n, "groups": k, "slope": round(b, 4),
            "slope_se": round(math.sqrt(ss1 / (n - k - 1) / sxx), 4) if sxx > 0 else None,
            "r2": round(1 - ss1 / ss0, 3) if ss0 > 0 else None,
            "unadjusted_cv_pct": _pct(math.sqrt(ss0 / (n - k))),
            "adjusted_cv_pct": _pct(math.sqrt(ss1 / (n - k - 1))),
            "left_out": {"unadjusted_cv_pct": _pct(math.sqrt(lobo0)),
                         "adjusted_cv_pct": _pct(math.sqrt(lobo1)),
                         "variance_ratio": round(lobo1 / lobo0, 3) if lobo0 > 0 else None}}


def _pct(sd: float) -> float:
    return round(100 * sd, 3)


def run_components(groups: list[list[list[float]]], cv_boot_pct: float) -> RunComponents | None:
    """Run-to-run (within a boot) and pure between-boot SD of a figure measured over R runs a
    boot: in each group the boot and the run means removed (a run's prompt set is the same in
    every boot of it), and the between-boot part what is left of a boot's out-of-sample noise."""
    ss, df, runs = 0.0, 0, None
    for boots in groups:
        r = len(boots[0]) if boots else 0
        if len(boots) < 2 or r < 2 or any(len(b) != r for b in boots) or runs not in (None, r):
            continue
        runs = r
        grand = fmean([y for b in boots for y in b])
        run_means = [fmean([b[j] for b in boots]) for j in range(r)]
        ss += math.fsum((y - fmean(b) - run_means[j] + grand) ** 2
                  for b in boots for j, y in enumerate(b))
        df += (len(boots) - 1) * (r - 1)
    if not df or runs is None:
        return None
    within = ss / df
    between = max(0.0, (cv_boot_pct / 100) ** 2 - within / runs)
    return {"runs": runs, "within_cv_pct": _pct(math.sqrt(within)),
            "between_cv_pct": _pct(math.sqrt(between))}


def _log(x: float | None) -> float | None:
    return math.log(x) if x and x > 0 else None


def boot_figure(raw: RawFile, rule: BarRule, cpus: list[str],
                withheld: Mapping[float | str, str] | None = None,
                idle: float | None = None) -> BootFigure | None:
    """One boot's (log speed, log figure) for a rule's figure, and each run's (the window's
    speed where runs did not record their own; the boot's `idle` probe speed, where the
    covariate is idle_speed, for all of them); a figure knee withholds
    (knee.analyze.sampling: `withheld`) is none."""
    figure = armfigures.arm_figures(raw, withheld).get(rule["point"], {}).get(rule["metric"])
    speed: float | None
    window: float | None
    if idle is not None:
        speed, over, window = idle, "idle", idle
    else:
        speed, over = covariate.figure_speed(raw, rule["point"], cpus)
        window = covariate.summary_speed((raw.get("host") or {}).get("cpu_speed_during"), cpus)
    x, y = _log(speed), _log(figure)
    if x is None or y is None:
        return None
    runs: list[tuple[float, float] | None] = []
    for p in raw["points"]:
        if str(p["point"]) == str(rule["point"]):
            run_y = _log(point_summary(p)[rule["metric"]])
            own = None if idle is not None else covariate.summary_speed(p.get("cpu_speed"), cpus)
            run_x = _log(own or window)
            runs.append(None if run_y is None or run_x is None else (run_x, run_y))
    every = [r for r in runs if r is not None]
    return {"x": x, "y": y, "over": over, "runs": every if len(every) == len(runs) else []}


def folder_boots(root: Path) -> list[Boot]:
    """Every session of a results folder: its group (the folder and the arm's server), its
    facts, its sessions' raw files and its costs."""
    plan = jsonio.read(Path(root) / layout.PLAN, "plan")
    stops = load_stops(plan, root)
    out: list[Boot] = []
    for (pair, arm), s in sorted(load_sessions(plan, root).items()):
        boot, stop = s["boot"], stops.get(f"{pair}-{arm}")
        out.append({"folder": plan["name"], "root": root, "boot": boot, "plan": plan,
                    "session": f"{pair}-{arm}",
                    "withheld": sampling.withheld(boot),
                    "group": (plan["name"], json.dumps(boot["server"], sort_keys=True)),
                    "facts": boot_facts(boot, plan), "raw": s["raw"],
                    "cost": cost(boot, stop, s)})
    return out


def once(boots: list[Boot]) -> list[Boot]:
    """The boots of the folders, refused where one boot (its experiment, session and boot
    time) comes twice: a folder read twice or a copy of one, whose boots would sit in the fit
    that predicts them and halve the noise."""
    seen: dict[tuple[str, ...], str] = {}
    for b in boots:
        boot = b["boot"]
        ident = (str(boot.get("experiment")), b["session"], str(boot.get("started_at")))
        if ident in seen:
            raise KneeError(f"knee calibrate: session {b['session']} of experiment "
                            f"{ident[0][:80]!r} (booted {ident[2][:40]}) is in {b['root']} and in "
                            f"{seen[ident]}: a folder read twice, or a copy of one; each boot "
                            "counts once")
        seen[ident] = str(b["root"])
    return boots


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def cost(boot: BootReceipt, stop: StopReceipt | None,
         session: LoadedSession) -> SessionCost:
    """What one session took: its boot (and whether the compile cache was warm), its wall time
    from boot to stop, and each sweep run's wall time by point."""
    cache = boot.get("compile_cache") or {}
    runs: dict[str, list[float]] = {}
    load = session["raw"].get(instruments.role(instruments.LOAD))
    for p in load["points"] if load else []:
        runs.setdefault(str(p["point"]), []).append(p["wall_s"])
    return {"boot_s": boot["boot_seconds"], "warm": bool(cache.get("existed"))
            and not cache.get("new_keys"),
            "session_s": _seconds(stop["stopped_at"]) - _seconds(boot["started_at"])
            if stop and stop.get("stopped_at") else None, "runs": runs}


def same_facts(boots: Sequence[Boot]) -> Facts:
    """The facts every boot shares; boots of another model, engine or host are refused."""
    first = boots[0]
    for b in boots[1:]:
        if bad := differing(first["facts"], b["facts"]):
            raise KneeError(f"{first['folder']} and {b['folder']} were not measured on the same "
                            f"model, engine and host, with the host speed sampled on the same "
                            f"CPUs ({'; '.join(bad)}): one calibration holds for one of each")
    return first["facts"]


def figure(rule: BarRule, boots: Sequence[Boot],
           name: str = HOST_SPEED) -> Figure | None:
    """One bar figure's slope and noise over the boots that measured it (None: too few), on
    the covariate `name`."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for b in boots:
        if rule["instrument"] in b["raw"]:
            cpus = covariate.cpu_names(b["plan"])
            idle = covariate.idle_speed(b["boot"], cpus) if name == IDLE_SPEED else None
            got = boot_figure(b["raw"][rule["instrument"]], rule, cpus,
                              withheld=b["withheld"], idle=idle)
            if got:
                groups.setdefault(b["group"], []).append((b, got))
    pairs = [[(g["x"], g["y"]) for _, g in members] for members in groups.values()]
    if sum(len(p) >= 2 for p in pairs) == 0 or sum(map(len, pairs)) - len(pairs) < 2:
        return None
    fitted = fit(pairs)
    runs = [[[y - fitted["slope"] * x for x, y in g["runs"]] for _, g in members if g["runs"]]
            for members in groups.values()]
    components = run_components(runs, fitted["left_out"]["adjusted_cv_pct"])
    out = Figure(instrument=rule["instrument"], metric=rule["metric"], point=str(rule["point"]),
                 rule=rule["name"], **fitted,
                 speed_over=sorted({g["over"] for m in groups.values() for _, g in m}))
    if components:
        out["runs"] = components
    return out


def costs(boots: Sequence[Boot]) -> Costs:
    """A session's costs in the first folder: boots with a warm and a cold compile cache, the
    wall time of a session, of one sweep run by point, and the rest (fixed) of a session."""
    warm = [b["cost"] for b in boots if b["cost"]["warm"]] or [b["cost"] for b in boots]
    cold = [b["cost"]["boot_s"] for b in boots if not b["cost"]["warm"]]
    session = mean([c["session_s"] for c in warm if c["session_s"]])
    points = sorted({p for b in boots for p in b["cost"]["runs"]}, key=_point_order)
    run_s = {p: round(fmean([w for b in boots for w in b["cost"]["runs"].get(p, [])]), 2)
             for p in points}
    runs = {p: len(boots[0]["cost"]["runs"].get(p, [])) for p in points}
    sweep = boots[0]["plan"]["instruments"].get(instruments.role(instruments.LOAD)) or {}
    return {"boot_s": round(fmean([c["boot_s"] for c in warm]), 1),
            "cold_boot_s": round(fmean(cold), 1) if cold else None,
            "session_s": round(session, 1) if session else None,
            "run_s": run_s, "runs": runs,
            "requests_per_stream": sweep.get("requests_per_stream"),
            "fixed_s": round(session - math.fsum(runs[p] * run_s[p] for p in points), 1)
            if session else None}


def _point_order(point: str) -> tuple[Any, ...]:
    return (0, int(point), "") if point.isdigit() else (1, 0, point)


def withheld_sessions(boots: Sequence[Boot]) -> list[Withheld]:
    """Each folder, temperature and reason for which knee withholds sessions' figures."""
    found: dict[tuple[Any, ...], list[str]] = {}
    for b in boots:
        for t, why in b["withheld"].items():
            found.setdefault((b["folder"], t, why), []).append(b["session"])
    return [{"folder": f, "temperature": t, "why": why, "sessions": s}
            for (f, t, why), s in found.items()]


def calibrate(roots: list[Path], timing_only: bool = False,
              name: str = HOST_SPEED) -> Calibration:
    """The calibration of the bar figures of these folders (their bars' rules, once each) on
    the covariate `name`. Figures knee withholds (the engine failed its sampling check) are
    left out, or with `timing_only` calibrated for their timing alone, which the file
    records."""
    roots = folderscan.checked(roots, "knee calibrate")
    boots = once([b for root in roots for b in folder_boots(root)])
    if not boots:
        raise KneeError("no measured session in " + ", ".join(map(str, roots)))
    if name == IDLE_SPEED and (bare := sorted(
            {b["folder"] for b in boots if not b["boot"].get("idle_speed")})):
        raise KneeError(f"knee calibrate --covariate idle_speed: {', '.join(bare)}: its boots "
                        "took no idle probe (a bar that adjusts for idle_speed takes one); "
                        "calibrate on an A/A measured with bar.adjust.covariate idle_speed")
    withheld = withheld_sessions(boots)
    if timing_only:
        for b in boots:
            b["withheld"] = {}
    facts = same_facts(boots)
    rules: dict[tuple[str, str, str], BarRule] = {}
    for b in boots:
        for rule in b["plan"]["bar"]["rules"]:
            rules.setdefault(key(rule), rule)
    figures = [f for rule in rules.values() if (f := figure(rule, boots, name))]
    if not figures:
        why = "; ".join(f"{w['folder']}: {w['why']} ({len(w['sessions'])} sessions)"
                        for w in withheld)
        raise KneeError("no bar figure of these folders has enough boots with a host speed "
                        "sampled in its window to calibrate"
                        + (f". knee withholds figures sampled where the engine failed its "
                           f"sampling check ({why}); --timing-only calibrates their timing "
                           "anyway, and the calibration file says so" if withheld else ""))
    first = [b for b in boots if b["folder"] == boots[0]["folder"]]
    out: Calibration = {
        "covariate": name, "method": covariate.METHODS[name], "facts": facts,
        "folders": [{"name": n, "boots": sum(b["folder"] == n for b in boots)}
                    for n in dict.fromkeys(b["folder"] for b in boots)],
        "figures": figures, "costs": costs(first)}
    if withheld and timing_only:
        out["timing_only"] = withheld
    elif withheld:
        out["withheld"] = withheld
    return out
