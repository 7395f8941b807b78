"""Live progress of a session: one line per point and per window as it finishes, to the
session's log (its stderr) and to the terminal running Snakemake (the controlling terminal the
session job shares with it, when there is one: not under Slurm or in CI), and on that terminal
a bar over a window's requests (done / total, elapsed, rate).

The bar counts the records the client has appended so far, from a thread that wakes a few
times a second: the client's loop does no work for it.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from knee.analyze import stats
from knee.core import jsonio, layout
from knee.core.errors import KneeError
from knee.core.records import Plan, RawWindow


@functools.cache
def terminal() -> TextIO | None:
    """The interactive terminal to draw on beside the log, or None."""
    if sys.stderr.isatty():
        return sys.stderr
    try:
        return open("/dev/tty", "w", encoding="utf-8")  # kept open for the session's life
    except OSError:
        return None


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
    tty = terminal()
    if tty is not None and tty is not sys.stderr:
        tty.write(line + "\n")
        tty.flush()


def point_line(sid: str, point: RawWindow) -> str:
    """`1-control sweep point 8 run 2: 1589.9 tok/s, TTFT p50 38.1 ms, decode p50 52.3 tok/s,
    64/64 ok`"""
    s = stats.point_summary(point)
    ttft = "n/a" if s["ttft_p50"] is None else f"{1000 * s['ttft_p50']:.1f} ms"
    rate = "n/a" if s["decode_rate_p50"] is None else f"{s['decode_rate_p50']:.1f} tok/s"
    throughput = "n/a" if s["throughput"] is None else f"{s['throughput']:.1f} tok/s"
    return (f"{sid} {point['profile']['instrument']} point {point['point']} run "
            f"{point['run']}: {throughput}, TTFT p50 {ttft}, decode p50 {rate}, "
            f"{s['requests'] - s['errors']}/{s['requests']} ok")


def clock(seconds: float) -> str:
    """`4 min 05 s`, or `35 s` under a minute."""
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def time_left(planned: int, done: int, since_first_s: float) -> float | None:
    """The experiment's time left when `done` of `planned` sessions have stopped,
    `since_first_s` after the first boot: the sessions still to run at the pace so far (boots,
    windows and the analysis between sessions alike; sessions measured two at a time count
    two). None before any session is done."""
    return None if done == 0 else (planned - done) * since_first_s / done


def experiment_line(plan: Plan, root: Path, sid: str, now: float) -> str:
    """`session 2-control, 3 of 6: 2 done, 4 min 12 s since the first boot; about 8 min 24 s
    left`, from the boot and stop receipts in the results folder as a session starts."""
    planned = [s["id"] for s in plan["protocol"]["sessions"]]
    done = [p for p in planned if p != sid and (root / layout.receipt(p, "stop")).is_file()]
    head = f"session {sid}, {planned.index(sid) + 1} of {len(planned)}"
    if not done:
        return f"{head}: the time left is known once a session is done"
    try:
        first = min(datetime.fromisoformat(jsonio.read(root / layout.receipt(p, "boot"),
                                                       "boot")["started_at"]).timestamp()
                    for p in done)
    except (KneeError, OSError, ValueError) as e:  # a line of progress never stops a session
        return f"{head}: the time left cannot be told ({e})"
    left = time_left(len(planned), len(done), now - first) or 0.0
    return (f"{head}: {len(done)} done, {clock(now - first)} since the first boot; about "
            f"{clock(left)} left")


class Bar:
    """`with Bar(label, total, done):` draws `label [####....] 12/64 3.1 s 3.9 req/s` while
    the block runs, from len(done); only on a terminal (or when forced: the benchmark)."""

    def __init__(self, label: str, total: int, done: list[Any], stream: TextIO | None = None,
                 force: bool = False, every_s: float = 0.25) -> None:
        self.label, self.total, self.done = label, total, done
        self.stream = stream or terminal()
        self.on = self.stream is not None and (force or self.stream.isatty())
        self.every_s = every_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def __enter__(self) -> Bar:
        self.t0 = time.monotonic()
        if self.on and self.total:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.thread.is_alive():
            self.stop.set()
            self.thread.join()
            self.draw(end="\n")

    def run(self) -> None:
        while not self.stop.wait(self.every_s):
            self.draw()

    def draw(self, end: str = "") -> None:
        n = len(self.done)
        elapsed = time.monotonic() - self.t0
        filled = int(20 * n / self.total)
        assert self.stream is not None  # drawn only where self.on
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (20 - filled)}] {n}/{self.total}"
                          f" {elapsed:.1f} s {n / elapsed if elapsed > 0 else 0:.1f} req/s{end}")
        self.stream.flush()
