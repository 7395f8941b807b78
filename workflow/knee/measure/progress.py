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

from knee.analyze import stats


@functools.cache
def terminal():
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


def point_line(sid: str, point: dict) -> str:
    """`1-control sweep point 8 run 2: 1589.9 tok/s, TTFT p50 38.1 ms, decode p50 52.3 tok/s,
    64/64 ok`"""
    s = stats.point_summary(point)
    ttft = "n/a" if s["ttft_p50"] is None else f"{1000 * s['ttft_p50']:.1f} ms"
    rate = "n/a" if s["decode_rate_p50"] is None else f"{s['decode_rate_p50']:.1f} tok/s"
    throughput = "n/a" if s["throughput"] is None else f"{s['throughput']:.1f} tok/s"
    return (f"{sid} {point['profile']['instrument']} point {point['point']} run "
            f"{point['run']}: {throughput}, TTFT p50 {ttft}, decode p50 {rate}, "
            f"{s['requests'] - s['errors']}/{s['requests']} ok")


class Bar:
    """`with Bar(label, total, done):` draws `label [####....] 12/64 3.1 s 3.9 req/s` while
    the block runs, from len(done); only on a terminal (or when forced: the benchmark)."""

    def __init__(self, label: str, total: int, done: list, stream=None, force: bool = False,
                 every_s: float = 0.25):
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

    def __exit__(self, *exc) -> None:
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
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (20 - filled)}] {n}/{self.total}"
                          f" {elapsed:.1f} s {n / elapsed if elapsed > 0 else 0:.1f} req/s{end}")
        self.stream.flush()
