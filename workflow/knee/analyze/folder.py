"""Reading a results folder: the sessions' receipts and raw files, and the bar's verdict."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypedDict, cast

from knee import instruments
from knee.core import jsonio, layout, rawfiles
from knee.core.errors import KneeError
from knee.core.records import (
    BootReceipt,
    LoadedSession,
    Plan,
    PlannedSession,
    RawFile,
    RawWindow,
    Recommendation,
    RequestRecord,
    Section,
    StopReceipt,
)
from knee.plan import stopping

# (pair, arm) -> {"boot", "raw": {instrument: raw}, "files": {kind: path}}: what
# load_sessions reads of a folder, and the comparison takes
Sessions = dict[tuple[int, str], LoadedSession]
Requests = dict[tuple[Any, ...], RequestRecord]  # (pair, run, index) -> a raw record


class SessionReceipts(TypedDict):
    """Each session's compile-cache and stop receipts, by session id."""

    caches: dict[str, Section]
    stops: dict[str, StopReceipt]


def paired_requests(sessions: Sessions, keep: Callable[[RawWindow, RequestRecord], bool]
                    ) -> Iterator[tuple[str, str, Requests, Requests, list[tuple[Any, ...]]]]:
    """Per instrument point: (instrument, point, the control's requests, the candidate's, the
    keys both have), each request by (pair, run, index), so that the candidate's is set
    against the control's same request in its pair; keep(point, record) picks the requests."""
    found: dict[tuple[str, str, str], Requests] = {}
    for (pair, arm), s in sorted(sessions.items()):
        for inst, raw in sorted(s["raw"].items()):
            for p in raw["points"]:
                got = found.setdefault((inst, str(p["point"]), arm), {})
                got |= {(pair, p["run"], r["index"]): r for r in p["records"] if keep(p, r)}
    for (inst, point, arm), control in sorted(found.items()):
        candidate = found.get((inst, point, "candidate"), {})
        same = sorted(set(control) & set(candidate))
        if arm == "control" and same:
            yield inst, point, control, candidate, same


class Named:
    """The files a command was handed on its command line (its rule's declared inputs). A
    command that reads a folder through this reads those files and no other: a file the rule
    does not declare is an error naming it, never a silent read."""

    def __init__(self, command: str, paths: Iterable[Path | str]):
        self.command = command
        self.paths = {Path(p).resolve() for p in paths}

    def read(self, path: Path, kind: str | None = None) -> dict[str, Any]:
        if Path(path).resolve() not in self.paths:
            raise KneeError(f"{self.command}: {path} is needed but not named on its command "
                            "line (--inputs: its rule's declared inputs); it reads no file it "
                            "was not handed")
        out: dict[str, Any] = jsonio.read(path, kind)
        return out


def reader(named: Named | None) -> Callable[..., dict[str, Any]]:
    """How to read a file of the folder: any (None: an audit, a bench) or only those named."""
    return jsonio.read if named is None else named.read


def boot_path(root: Path, sid: str) -> Path:
    return Path(root) / layout.receipt(sid, "boot")


def load_boots(plan: Plan, root: Path) -> list[BootReceipt]:
    """Every session's boot receipt, in protocol order."""
    return [jsonio.read(boot_path(root, s["id"]), "boot") for s in realized_sessions(plan, root)]


def receipt_paths(plan: Plan, root: Path, kind: str) -> dict[str, Path]:
    """Every session's receipt of this kind that exists, by session id."""
    paths = {s["id"]: Path(root) / layout.receipt(s["id"], kind)
             for s in realized_sessions(plan, root)}
    return {sid: p for sid, p in paths.items() if p.exists()}


def load_stops(plan: Plan, root: Path) -> dict[str, StopReceipt]:
    """Every session's stop receipt that exists, by session id."""
    return {sid: jsonio.read(p, "stop") for sid, p in receipt_paths(plan, root, "stop").items()}


def session_receipts(plan: Plan, root: Path) -> SessionReceipts:
    """What the README shows of each session beside its boot: compile cache and stop."""
    return {"caches": {sid: jsonio.read(p, "cache")
                       for sid, p in receipt_paths(plan, root, "cache").items()},
            "stops": load_stops(plan, root)}


def realized_path(root: Path) -> Path:
    return Path(root) / layout.REALIZED


def realized_pairs(plan: Plan, root: Path, named: Named | None = None) -> int:
    """How many pairs ran: the plan's number, or (stopping by precision) the realized receipt."""
    lo, hi = stopping.bounds(plan["protocol"]["pairs"])
    if lo == hi:
        return hi
    pairs: int = reader(named)(realized_path(root), "realized")["pairs"]
    return pairs


def sessions_upto(plan: Plan, n: int) -> list[PlannedSession]:
    """The planned sessions of the first n pairs, in protocol order, each id checked to be its
    pair and arm (knee makes the session's file names of it) before any file is named."""
    for i, s in enumerate(plan["protocol"]["sessions"]):
        if s["id"] != f"{s['pair']}-{s['arm']}":
            raise KneeError(f"plan.json: protocol.sessions[{i}].id {str(s['id'])[:80]!r} is not "
                            f"its pair and arm ({s['pair']}-{s['arm']}): not read further")
    return [s for s in plan["protocol"]["sessions"] if s["pair"] <= n]


def realized_sessions(plan: Plan, root: Path,
                      named: Named | None = None) -> list[PlannedSession]:
    """The planned sessions that belong to pairs that ran, in protocol order."""
    return sessions_upto(plan, realized_pairs(plan, root, named))


def load_sessions(plan: Plan, root: Path, pairs: int | None = None,
                  named: Named | None = None) -> Sessions:
    """sessions[(pair, arm)] = {"boot", "raw": {instrument: raw}, "files": {kind: path}}, for
    the pairs that ran (or the first `pairs`); with `named`, only from the files named."""
    out: Sessions = {}
    read = reader(named)
    upto = realized_pairs(plan, root, named) if pairs is None else pairs
    for session in sessions_upto(plan, upto):
        sid = session["id"]
        files = {name: rawfiles.stored(Path(root) / layout.raw_dir(sid), f"{name}.json")
                 for name in instruments.instrument_names(plan)}
        files["boot"] = boot_path(root, sid)
        out[(session["pair"], session["arm"])] = {
            # read against their schemas (knee.core.jsonio): the records they are
            "boot": cast(BootReceipt, read(files["boot"], "boot")),
            "raw": {name: cast(RawFile, read(path, "raw")) for name, path in files.items()
                    if name != "boot"},
            "files": {kind: str(path) for kind, path in files.items()},
        }
    return out


def recommendation_of(root: Path) -> Recommendation | None:
    """recommend/recommendation.json, if the folder has one."""
    path = Path(root) / layout.RECOMMENDATION
    return jsonio.read(path, "recommendation") if path.is_file() else None
