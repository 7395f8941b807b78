"""Simultaneous order on the host (knee.plan.together plans it): `knee pair` runs both sessions
of a pair at once as two `knee session` processes and stops both if either fails; each session
runs on its own set (its engine and its load generator pinned to the same CPUs, its engine on
its GPUs) and meets its partner before every window, so that both windows start at the same
moment.

The meeting is two files in the folder's .run/together/PAIR/: each session writes when it is
ready for a window and waits for its partner's; both then start at the later of the two times
plus a short lead, a moment each computes alike from the same two files."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knee.core import jsonio, layout
from knee.core.errors import KneeError
from knee.core.records import Plan

LEAD_S = 0.25  # from the later session's ready to the start: both are sleeping by then
POLL_S = 0.01
AHEAD_S = 5.0  # how far ahead of this host's clock a partner's ready time may lie
STOP_WAIT_S = 180  # a session told to stop stops its engine first


def placed(rt: Mapping[str, Any], info: Mapping[str, Any]) -> dict:
    """The runtime section as one session of a simultaneous pair runs it: its set's CPUs as
    the engine's, its set's GPUs; any other session's is the plan's."""
    if "together" not in info:
        return dict(rt)
    return {**rt, "engine_cpus": list(info["cpus"]),
            **({"gpus": list(info["gpus"])} if "gpus" in info else {})}


def meeting_dir(root: Path, pair: int) -> Path:
    return Path(root) / ".run" / "together" / str(pair)


def meet(root: Path, info: Mapping[str, Any], window: str, timeout_s: float) -> dict:
    """Wait for the partner session to be ready for `window` too, then until the common start;
    what the raw window records of it."""
    where = meeting_dir(root, info["pair"])
    ready = time.time()
    jsonio.atomic_write_text(where / f"{window}.{info['id']}", f"{ready:.6f}\n")
    theirs = where / f"{window}.{info['together']}"
    deadline = time.monotonic() + timeout_s
    while not theirs.is_file():
        if time.monotonic() > deadline:
            raise KneeError(f"session {info['id']}: its partner {info['together']} was not ready "
                            f"for the {window} window within {timeout_s:.0f} s")
        time.sleep(POLL_S)
    start = max(ready, partner_ready(theirs, info)) + LEAD_S
    time.sleep(max(0.0, start - time.time()))
    return {"partner": info["together"], "start": round(start, 6),
            "waited_s": round(start - ready, 6)}


def partner_ready(path: Path, info: Mapping[str, Any]) -> float:
    """When the partner said it was ready: a time it wrote before this session saw the file,
    so not ahead of this host's clock by more than AHEAD_S (a stale file, a skewed clock or
    another user's write would have the session sleep, holding its engine, without bound)."""
    text = jsonio.read_text(path, 64)
    try:
        when = float(text)
    except ValueError:
        raise KneeError(f"session {info['id']}: {path}: {text.strip()[:40]!r} is not the time "
                        "its partner was ready") from None
    ahead = when - time.time()
    if not ahead <= AHEAD_S:  # also NaN
        raise KneeError(f"session {info['id']}: {path}: its partner says it was ready "
                        f"{ahead:.0f} s from now; a partner writes the time it is ready, at "
                        f"most {AHEAD_S:.0f} s ahead: not waited for")
    return when


def pair_sessions(plan: Plan, pair: int) -> list[dict]:
    found = [s for s in plan["protocol"]["sessions"] if s["pair"] == pair]
    if len(found) != 2 or not all("together" in s for s in found):
        raise KneeError(f"plan.json: pair {pair} is not a pair of simultaneous sessions "
                        "(protocol.order is not simultaneous, or the pair is not planned)")
    return found


def run_pair(plan_path: Path, pair: int, python: str, engine_info: Path | None) -> None:
    """Both sessions of a pair as two processes at once; where one fails, the other is stopped
    (by its process id) and the pair fails, its sessions' partial data under failed/."""
    root = Path(plan_path).parent
    sessions = pair_sessions(jsonio.read(plan_path, "plan"), pair)
    shutil.rmtree(meeting_dir(root, pair), ignore_errors=True)
    meeting_dir(root, pair).mkdir(parents=True)
    procs = {s["id"]: subprocess.Popen(session_argv(plan_path, s["id"], python, engine_info))
             for s in sessions}
    previous = {sig: signal.signal(sig, _raise) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        failed = supervise(procs)
    finally:
        stop_all(procs)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(meeting_dir(root, pair), ignore_errors=True)
    if failed:
        for sid, proc in procs.items():
            if proc.returncode == 0:
                set_aside(root, sid)
        said = "; ".join(f"{sid} exited {procs[sid].returncode}" for sid in failed)
        raise KneeError(f"pair {pair}: {said}; the pair is measured together or not at all, so "
                        "its other session was stopped, or set aside under failed/ if it had "
                        "finished; see the sessions' logs")


def session_argv(plan_path: Path, sid: str, python: str, engine_info: Path | None) -> list[str]:
    """`knee session` for one session of the pair, with this process's Python."""
    return [sys.executable, "-m", "knee", "session", "--plan", str(plan_path), "--id", sid,
            "--python", python, *(["--engine-info", str(engine_info)] if engine_info else [])]


def _raise(signum, _frame):
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def supervise(procs: dict[str, subprocess.Popen]) -> list[str]:
    """Wait for both sessions; at the first that fails, stop the other. The ids that failed."""
    while True:
        codes = {sid: p.poll() for sid, p in procs.items()}
        failed = [sid for sid, c in codes.items() if c not in (None, 0)]
        if failed or all(c == 0 for c in codes.values()):
            return failed
        time.sleep(0.2)


def stop_all(procs: dict[str, subprocess.Popen]) -> None:
    """Every session still running is told to stop (SIGTERM to its process id: it stops its
    engine), and killed if it has not stopped in STOP_WAIT_S."""
    for p in procs.values():
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
    for p in procs.values():
        try:
            p.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def set_aside(root: Path, sid: str) -> None:
    """A session that finished while its partner failed: its files moved under failed/ (a
    session of half a pair measures nothing the comparison can use, and is kept, not lost)."""
    dest = root / "failed" / f"{sid}-unpaired-{int(time.time())}"
    for src in [root / layout.raw_dir(sid), *(root / layout.RECEIPTS).glob(f"{sid}-*.json")]:
        if src.exists():
            target = dest / src.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, target)
