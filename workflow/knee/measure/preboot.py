"""What a session checks before anything boots and that needs no session: nothing measured
is overwritten, the node offers the arm's secrets, CPUs, GPUs and model, it is the kind of host
the folder's sessions were measured on, and an adjusted bar's calibration holds for this engine
and host."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from knee.analyze import hosts
from knee.core import datasets, jsonio, layout
from knee.core.errors import KneeError
from knee.core.records import Plan, Section
from knee.instruments import dataset_selections
from knee.measure import receipts
from knee.measure.host import gpu
from knee.plan import adjust, places


def refuse_overwrite(root: Path, sid: str) -> None:
    """A measurement is never overwritten, whatever asked for it (root ignores file modes)."""
    done = [p for p in (root / layout.receipt(sid, "boot"), root / layout.raw_dir(sid))
            if p.exists() and (p.is_file() or any(p.iterdir()))]
    if done:
        raise KneeError(
            f"session {sid} is already measured ({', '.join(map(str, done))}); knee never "
            "overwrites a measurement. Something the session depends on changed since it ran "
            "(its config section or the rule's code): to measure again use a new experiment "
            f"name, or move {root} away.")


def preflight(plan: Plan, arm_name: str, rt: Section | None = None) -> None:
    """What this node must offer before anything boots: every secret the arm takes by
    reference, the engine's CPUs, Python and GPUs (`rt`: the session's runtime section), and a
    model given by path, and every prompt a dataset selection sends (its file's sha256)."""
    rt = plan["runtime"] if rt is None else rt
    missing = [k for k in plan["arms"][arm_name].get("secret_env", []) if not os.environ.get(k)]
    if missing:
        raise KneeError(f"the {arm_name} arm's secret_env: ${missing[0]} is not set in "
                               "knee's environment; nothing was booted")
    places.check_machine(rt, "plan.json")
    if gpus := gpu.ids(rt):
        gpu.facts(gpu.nvml(), gpus)  # NVML answers for every GPU named
    if not plan["model"]["generated"]:
        places.check_model_dir(plan["model"]["path"], "model.path", "plan.json")
    check_datasets(plan.get("instruments") or {})


def check_datasets(instruments: Section) -> None:
    """Every dataset selection's prompts are in their checked file, as many as are sent."""
    for key, selection, needed in dataset_selections(instruments):
        datasets.take(selection, needed, where=key)


def check_calibrated(plan: Plan, engine_facts: Section) -> None:
    """Before anything boots: an adjusted bar's calibration holds for this engine and host
    (knee.plan.adjust), or nothing is measured."""
    if not plan.get("calibration"):
        return
    hw, ids = receipts.hardware(), gpu.ids(plan["runtime"])
    names = sorted({g["name"] for g in gpu.facts(gpu.nvml(), ids)}) if ids else []
    adjust.plan_facts(plan["calibration"], {
        "engine": adjust.engine_name(engine_facts.get("packages")),
        "gpu": ", ".join(names) or "none",
        "cpu_model": hw["cpu_model"], "cpus": hw["cpus"]}, "plan.json: bar.adjust.calibration")


def warn_split_pair(plan: Plan, root: Path, sid: str, here: str | None) -> str | None:
    """Where this session's pair partner was measured on another host (a lease lost between
    them), say so before the boot: the pair's effect will carry the hosts' difference, and the
    bar judges the rule without it beside the verdict (knee.analyze.hosts). Measures on."""
    me = next(s for s in plan["protocol"]["sessions"] if s["id"] == sid)
    for other in plan["protocol"]["sessions"]:
        path = root / layout.receipt(other["id"], "boot")
        if other["pair"] != me["pair"] or other["id"] == sid or not path.is_file():
            continue
        there = (jsonio.read(path, "boot").get("hardware") or {}).get("boot_id")
        if here and there and there != here:
            said = (f"knee: session {sid}: its pair partner {other['id']} was measured on "
                    f"another host (boot {there[:8]}, this one {here[:8]}); pair {me['pair']}'s "
                    "effect carries the hosts' difference, and the bar judges each rule "
                    "without it too")
            print(said, file=sys.stderr)
            return said
    return None


def host_hardware(rt: Section) -> Section:
    """This host as a boot receipt records it: its machine facts and, where the runtime section
    `rt` names GPUs, NVML's facts of each."""
    hardware = receipts.hardware()
    if gpus := gpu.ids(rt):
        hardware["nvml"] = gpu.facts(gpu.nvml(), gpus)
    return hardware


def check_same_host_kind(plan: Plan, root: Path, sid: str, here: Section) -> None:
    """Before anything boots: this host (`here`, as host_hardware gives it) is the kind every
    measured session of the folder ran on. A lease may end on one host and the folder go on
    on another of its kind (the bar shows each host's spread); another kind is another
    experiment, whose sessions would carry the hardware's difference as the change's."""
    mine = hosts.kind(here)
    for other in plan["protocol"]["sessions"]:
        path = root / layout.receipt(other["id"], "boot")
        if other["id"] == sid or not path.is_file():
            continue
        theirs = hosts.kind(jsonio.read(path, "boot").get("hardware") or {})
        for what, value in theirs.items():
            if value is not None and mine[what] is not None and mine[what] != value:
                raise KneeError(
                    f"session {sid}: this host's {what} is {mine[what]!r}, and {plan['name']}'s "
                    f"session {other['id']} was measured on {value!r} ({receipts.shown(path)}: "
                    f"hardware); nothing was booted. One experiment's sessions are measured on "
                    f"one kind of host: measure the rest where the {what} is {value!r}, or the "
                    "whole experiment again under a new name (--config name=NEW)")
