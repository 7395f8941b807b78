"""What the host did during each window, from the facts each raw file holds: windows measured
while it did other work, the engine CPUs' speed and the GPUs' clock over the windows, and per
bar rule how closely the rule's figure followed that speed over the boots."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from typing import Any

from knee.analyze import noise
from knee.analyze.armfigures import arm_figures
from knee.analyze.folder import Sessions
from knee.analyze.stats import fmean, mean
from knee.core.records import BarRule, Plan, SessionRaw
from knee.core.records.covariate import FollowsSpeed, GpuClocks, HostSpeed, WindowSpread

FOREIGN_BUSY = 0.10  # the load generator's CPUs busy with other work beyond this: flagged
STEAL = 0.02  # the hypervisor took more than this share of a CPU: flagged
WindowKey = tuple[int, str, str]  # (pair, arm, instrument)


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


def host_speed(plan: Plan, sessions: Mapping[tuple[int, str], SessionRaw]) -> HostSpeed | None:
    """How fast the engine's CPUs ran during each window (the median of the samples taken
    while it ran, knee.measure.host.speed), their spread, and per bar rule the correlation over
    boots between that speed and the rule's figure, each arm's figures taken relative to the
    arm's mean. None where no window was sampled (an older run, or no engine CPUs configured)."""
    cpus = [f"cpu{c}" for c in plan.get("runtime", {}).get("engine_cpus") or []]

    def speed(host: Mapping[str, Any]) -> float | None:
        during = host.get("cpu_speed_during") or {}
        values = [during[c]["median"] for c in cpus if c in during]
        return mean(values) if values else None

    found = per_window(plan, sessions, speed)
    if not found:
        return None
    values, spread = found
    return {"cpus": cpus, "method": noise.SPEED_METHOD, **spread,
            "windows": [{"session": f"{p}-{a}", "instrument": i, "speed": round(v, 2)}
                        for (p, a, i), v in values.items()]}


def gpu_clocks(plan: Plan, sessions: Sessions) -> GpuClocks | None:
    """The GPUs' SM clock during each window (the median of the samples, knee.measure.host.gpu;
    the mean over the GPUs), its spread, the throttle reasons seen, and per bar rule the correlation
    over boots between that clock and the rule's figure. None where no window was sampled."""
    def clock(host: Mapping[str, Any]) -> float | None:
        values = [g["sm_clock_mhz"]["median"] for g in (host.get("gpu_during") or {}).values()
                  if "sm_clock_mhz" in g]
        return mean(values) if values else None

    found = per_window(plan, sessions, clock)
    if not found:
        return None
    values, spread = found
    reasons = sorted({r for s in sessions.values() for raw in s["raw"].values()
                      for g in ((raw.get("host") or {}).get("gpu_during") or {}).values()
                      for r, share in g.get("reasons", {}).items() if share > 0})
    return {"gpus": plan.get("runtime", {}).get("gpus"), "reasons_seen": reasons, **spread,
            "windows": [{"session": f"{p}-{a}", "instrument": i, "sm_clock_mhz": round(v, 2)}
                        for (p, a, i), v in values.items()]}


def per_window(plan: Plan, sessions: Mapping[tuple[int, str], SessionRaw],
               pick: Callable[[Mapping[str, Any]], float | None]) -> \
        tuple[dict[WindowKey, float], WindowSpread] | None:
    """One figure of each window's host facts (pick(host) -> value or None) by window, its
    range and spread, and per bar rule how closely the rule's figure followed it over the
    boots."""
    values: dict[WindowKey, float] = {}
    for (pair, arm), s in sorted(sessions.items()):
        for inst, raw in sorted(s["raw"].items()):
            got = pick(raw.get("host") or {})
            if got is not None:
                values[(pair, arm, inst)] = got
    if not values:
        return None
    follows = [f for rule in plan.get("bar", {}).get("rules", [])
               if (f := follows_speed(rule, sessions, values))]
    return values, {
        "range": [round(min(values.values()), 2), round(max(values.values()), 2)],
        "spread_pct": round(noise.spread_pct(list(values.values())) or 0.0, 1), "rules": follows}


def instrument_speed(speed: HostSpeed | None, instrument: str) -> float | None:
    """The median engine-CPU speed over one instrument's windows of a host_speed summary."""
    values = [w["speed"] for w in (speed["windows"] if speed else [])
              if w["instrument"] == instrument]
    return round(statistics.median(values), 2) if values else None


def follows_speed(rule: BarRule, sessions: Mapping[tuple[int, str], SessionRaw],
                  speeds: Mapping[WindowKey, float]) -> FollowsSpeed | None:
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
