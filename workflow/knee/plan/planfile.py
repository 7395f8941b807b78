"""plan.json as the folder's binding to its config: written before the first boot, and once a
session has booted there never planned again, from this config or another."""

from __future__ import annotations

import json
from pathlib import Path

from knee.core import jsonio, layout
from knee.core.errors import KneeError
from knee.core.records import Plan, Section
from knee.plan.arms import differences
from knee.plan.config import measured_runtime

PLANNED = ("question", "variable", "arms", "model", "runtime", "protocol", "instruments",
           "analysis", "bar")


def measured(root: Path | str) -> bool:
    return any(Path(root).glob(layout.receipt("*", "boot")))


def plan_fixed(root: Path | str) -> bool:
    """Whether plan.json is what booted sessions were measured under (then nothing makes it
    again)."""
    return (Path(root) / layout.PLAN).is_file() and measured(root)


def planned_part(plan: Plan) -> Section:
    """What a plan measures (not where its sessions run)."""
    return {k: plan.get(k) for k in PLANNED} | {
        "runtime": measured_runtime(plan.get("runtime") or {})}


def check_bound(plan: Plan, root: Path | str, source: str) -> None:
    """A results folder belongs to the config in its plan.json: once a session has booted
    there, another config under the same name is refused."""
    path = Path(root) / layout.PLAN
    if not measured(root):
        return
    if not path.is_file():
        raise missing_plan(path)
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise KneeError(f"{path}: unreadable ({e}); knee does not plan over a measured "
                        "experiment") from None
    if old.get("config_sha256") == plan["config_sha256"]:
        return
    diffs = differences(planned_part(old), planned_part(plan))
    shown = "\n  ".join(f"{k}: measured={a!r} now={b!r}" for k, a, b in diffs[:8])
    raise KneeError(
        f"{source}: {root} was measured from another config ({old.get('config_file')}, sha256 "
        f"{str(old.get('config_sha256'))[:12]}; this one is {plan['config_sha256'][:12]}); a "
        "measured experiment is never re-planned: give this config a name of its own "
        f"(name: in the file, or --config name=NEW). What differs:\n  {shown}")


def missing_plan(path: Path) -> KneeError:
    return KneeError(f"{path}: missing from a folder whose sessions have booted: the plan they "
                     "were measured under is gone, and knee never plans a measured experiment "
                     "again; restore plan.json (git checkout, or the copy you brought back) "
                     "or measure under a new name")


def write_plan(path: Path | str, plan: Plan) -> None:
    """plan.json, written before the first boot; after it only ever written again unchanged."""
    path = Path(path)
    if not path.is_file() and measured(path.parent):
        raise missing_plan(path)
    if path.is_file() and measured(path.parent):
        old = json.loads(path.read_text(encoding="utf-8"))
        fresh = json.loads(json.dumps(plan))
        if {k: v for k, v in old.items() if k in fresh and k != "workflow"} != \
                {k: v for k, v in fresh.items() if k != "workflow"}:
            raise KneeError(f"{path}: a session has booted under this plan; knee never "
                            "re-plans a measured experiment (measure it under a new name)")
        return  # the same plan: it keeps the commit that planned it
    jsonio.write(path, "plan", plan)
