"""A verification run's prediction: the recommendation it checks, registered by sha256 in its
plan and sealed in its results folder when it is planned.

From then on the folder reads only its sealed copy (layout.PREDICTION). The recommendation it
was copied from stays a derived file of another experiment, which a later re-render may rewrite;
the verification is judged against the bytes it was registered with, whatever happens there.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from knee.core import jsonio
from knee.core.errors import KneeError
from knee.core.records import Section


def prediction_ref(path: str, source: str) -> Section:
    """The recommendation a verification run checks: its file and sha256 (registered). Read
    bounded, a regular file only, and held to the recommendation schema when the config is
    read, not at the end of the run."""
    where = f"{source}: prediction: {path!r}"
    try:
        data = jsonio.read_bytes(path)
        rec = json.loads(data)
    except KneeError as e:
        raise KneeError(f"{where}: {e}") from None
    except (OSError, ValueError) as e:
        raise KneeError(f"{where}: unreadable ({e})") from None
    if not isinstance(rec, dict) or rec.get("schema") != "knee/recommendation" \
            or rec.get("status") != "recommended":
        raise KneeError(f"{where} is not a recommendation written by `knee recommend`")
    try:
        jsonio.check("recommendation", rec, where)
    except KneeError as e:
        raise KneeError(f"{e} (not a recommendation as `knee recommend` writes one)") from None
    return {"file": path, "sha256": hashlib.sha256(data).hexdigest()}


def seal(plan_path: Path, out: Path) -> None:
    """Copy the recommendation plan.json registers to `out`, refusing bytes other than the
    registered ones (the recommendation changed after the run was planned)."""
    plan = jsonio.read(plan_path, "plan")
    ref = plan.get("prediction")
    if not ref:
        raise KneeError(f"{plan_path}: registers no prediction (not a verification run)")
    try:
        data = jsonio.read_bytes(ref["file"])
    except (OSError, KneeError) as e:
        raise KneeError(f"{plan_path}: prediction: {ref['file']!r}: unreadable ({e})") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref["sha256"]:
        raise KneeError(f"{plan_path}: prediction: {ref['file']} has sha256 {digest[:12]}, the "
                        f"plan registered {ref['sha256'][:12]}: the recommendation changed after "
                        "this run was planned; put the registered file back (its sha256 is in "
                        "plan.json#/prediction) or plan the verification under a new name")
    jsonio.atomic_write_text(Path(out), data)
