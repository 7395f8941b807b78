"""Simultaneous order on the host (knee.plan.together plans it): `knee pair` runs both sessions
of a pair at once as two `knee session` processes and stops both if either fails; each session
runs on its own set (its engine and its load generator pinned to the same CPUs, its engine on
its GPUs) and meets its partner before every window, so that both windows start at the same
moment.

The meeting is two files in the folder's .run/together/PAIR/: each session writes when it is
ready for a window and waits for its partner's; both then start at the later of the two times
plus a short lead, a moment each computes alike from the same two files. In interleaved order
the session of set 2 boots after set 1's (boot_turn), and inside a window the sessions' traffic
takes turns (Turns), each turn's end a file of the same folder."""

from __future__ import annotations

import functools
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
from knee.core.records import Plan, PlannedSession, Section
from knee.core.records.together import Together
from knee.plan import together as ptogether

LEAD_S = 0.25  # from the later session's ready to the start: both are sleeping by then
POLL_S = 0.01
TURN_POLL_S = 0.001  # a turn's handoff: how often the waiting session looks for it
AHEAD_S = 5.0  # how far ahead of this host's clock a partner's ready time may lie
MEET_SLACK_S = 3600  # beyond the boot timeout, how long a session waits for its partner
STOP_WAIT_S = 180  # a session told to stop stops its engine first


def placed(rt: Mapping[str, Any], info: Mapping[str, Any]) -> Section:
    """The runtime section as one session runs it: a session of a simultaneous or
    interleaved pair with a set of its own, its set's CPUs as the engine's and (simultaneous)
    its set's GPUs; any other session's is the plan's."""
    return {**rt, **({"engine_cpus": list(info["cpus"])} if "cpus" in info else {}),
            **({"gpus": list(info["gpus"])} if "gpus" in info else {})}


def window_pairing(root: Path, info: Mapping[str, Any], protocol: Mapping[str, Any],
                   boot_timeout_s: float, window: str) -> tuple[Any, Turns | None]:
    """Both arms at once: meeting the partner before the window starts (simultaneous and
    interleaved order) and the window's turns (interleaved); (None, None) in any other order.
    The partner may still boot, or measure: it is waited for beyond the boot timeout."""
    if "together" not in info:
        return None, None
    timeout = boot_timeout_s + MEET_SLACK_S
    turns = Turns(root, info, window, protocol["seed"], timeout) \
        if protocol["order"] == ptogether.INTERLEAVED else None
    return functools.partial(meet, root, info, window, timeout), turns


def meeting_dir(root: Path, pair: int) -> Path:
    return Path(root) / ".run" / "together" / str(pair)


def meet(root: Path, info: Mapping[str, Any], window: str, timeout_s: float) -> Together:
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


def pair_sessions(plan: Plan, pair: int) -> list[PlannedSession]:
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


def _raise(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def supervise(procs: dict[str, subprocess.Popen[bytes]]) -> list[str]:
    """Wait for both sessions; at the first that fails, stop the other. The ids that failed."""
    while True:
        codes = {sid: p.poll() for sid, p in procs.items()}
        failed = [sid for sid, c in codes.items() if c not in (None, 0)]
        if failed or all(c == 0 for c in codes.values()):
            return failed
        time.sleep(0.2)


def stop_all(procs: dict[str, subprocess.Popen[bytes]]) -> None:
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


class Turns:
    """Interleaved order: one window's traffic taking turns with the partner session's. Both
    sessions send the same units (one request at concurrency 1, one closed loop otherwise) in
    the same order; unit k of block k // 2 goes first to the block's first arm where k is even,
    to the other where k is odd (ABBA). Step 2k + (0 or 1) is written to the meeting folder
    when it ends; a session waits for the step before its own, unless that step was its own."""

    def __init__(self, root: Path, info: Mapping[str, Any], window: str, seed: int,
                 timeout_s: float):
        self.where, self.info, self.window = meeting_dir(root, info["pair"]), info, window
        self.seed, self.timeout_s = seed, timeout_s
        self.unit, self.step, self.began, self.label = 0, -1, 0.0, ""
        # per unit: [unit, 0 or 1 (went first or second), began, ended]
        self.log: list[list[Any]] = []

    def position(self, unit: int) -> int:
        return ptogether.position(self.seed, self.info["pair"], self.window, unit,
                                  self.info["arm"])

    def take(self, label: str) -> float:
        """Wait for this session's turn at the next unit (`label`: what it sends, the same in
        both sessions); the seconds waited."""
        pos = self.position(self.unit)
        self.step = 2 * self.unit + pos
        waited = 0.0
        mine_before = pos == 0 and self.unit > 0 and self.position(self.unit - 1) == 1
        if self.step > 0 and not mine_before:
            waited = self.wait(self.step - 1, label if pos == 1 else None)
        self.label, self.began = label, time.time()
        return waited

    def release(self) -> None:
        """This session's turn at the unit has ended: the partner may take the next step."""
        ended = time.time()
        jsonio.atomic_write_text(self.where / f"{self.window}.step.{self.step}",
                                 f"{self.unit} {self.label}\n")
        self.log.append([self.unit, self.step % 2, round(self.began, 6), round(ended, 6)])
        self.unit += 1

    def wait(self, step: int, same: str | None) -> float:
        """Until the partner has ended `step`; where it was the same unit as this session's
        (`same`: this session's label of it), the partner must have sent the same."""
        path, started = self.where / f"{self.window}.step.{step}", time.monotonic()
        deadline = started + self.timeout_s
        while not path.is_file():
            if time.monotonic() > deadline:
                raise KneeError(f"session {self.info['id']}: its partner {self.info['together']} "
                                f"did not end its turn {step} of the {self.window} window "
                                f"within {self.timeout_s:.0f} s")
            time.sleep(TURN_POLL_S)
        theirs = jsonio.read_text(path, 256).strip()
        if same is not None and theirs != f"{self.unit} {same}":
            raise KneeError(f"session {self.info['id']}: in the {self.window} window its "
                            f"partner {self.info['together']} sent {theirs!r} where this session "
                            f"sends '{self.unit} {same}': interleaved arms must send the same "
                            "units in the same order")
        return time.monotonic() - started


def boot_turn(root: Path, info: Mapping[str, Any], timeout_s: float) -> None:
    """Interleaved order: the session of set 2 boots once its partner (set 1) has booted and
    checked its engine, so that the engines' memory profiling and compile never overlap."""
    if info["set"] == 1:
        return
    path, deadline = meeting_dir(root, info["pair"]) / f"booted.{info['together']}", \
        time.monotonic() + timeout_s
    while not path.is_file():
        if time.monotonic() > deadline:
            raise KneeError(f"session {info['id']}: its partner {info['together']} had not "
                            f"booted within {timeout_s:.0f} s")
        time.sleep(POLL_S * 10)


def booted(root: Path, info: Mapping[str, Any]) -> None:
    jsonio.atomic_write_text(meeting_dir(root, info["pair"]) / f"booted.{info['id']}",
                             f"{time.time():.6f}\n")
