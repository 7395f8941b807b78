"""How fast the host's CPUs ran during a window, sampled while it runs.

On a virtual machine the clock frequency is not readable, and the hypervisor's steal counter
does not see a vCPU that runs, but runs slower (a busy sibling thread on the host, a frequency
state). A fixed piece of work timed by the CPU time it took shows it: a sampler process does
WORK additions on each CPU every INTERVAL_S seconds. CPU time, not wall time, so sharing a CPU
with the engine does not count as slowness, only how fast the CPU ran the work. About 1 ms
every 0.25 s: under 1 % of a CPU. Run as `python -m knee.measure.host.speed CPU,CPU INTERVAL`;
it prints one line per sample (monotonic time, CPU, million additions per second) until terminated.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Self

from knee.core.records import Section

WORK = 20_000
INTERVAL_S = 0.25


def timed_work(work: int = WORK) -> float:
    """Million additions per second of CPU time this thread got."""
    t0 = time.thread_time_ns()
    total = 0
    for i in range(work):
        total += i
    return work / max(time.thread_time_ns() - t0, 1) * 1e3


def sample(cpus: list[int]) -> dict[str, float]:
    """One sample per CPU, this process moved onto it and back."""
    home = os.sched_getaffinity(0)
    out = {}
    try:
        for cpu in cpus:
            try:
                os.sched_setaffinity(0, {cpu})
            except OSError:  # not this process's to use (a cgroup's cpuset): not sampled
                continue
            out[f"cpu{cpu}"] = round(timed_work(), 2)
    finally:
        os.sched_setaffinity(0, home)
    return out


def summary(samples: list[tuple[float, str, float]], t0: float, t1: float) -> Section:
    """Per CPU over [t0, t1]: median, 10th and 90th percentile and count of the samples."""
    per_cpu: dict[str, list[float]] = {}
    for t, cpu, speed in samples:
        if t0 <= t <= t1:
            per_cpu.setdefault(cpu, []).append(speed)
    out = {}
    for cpu, values in sorted(per_cpu.items()):
        deciles = (statistics.quantiles(values, n=10, method="inclusive") if len(values) > 1
                   else values * 9)
        out[cpu] = {"median": round(statistics.median(values), 2), "p10": round(deciles[0], 2),
                    "p90": round(deciles[-1], 2), "samples": len(values)}
    return out


def series(samples: list[tuple[float, str, float]], t0: float, t1: float) -> Section:
    """The samples taken over [t0, t1], compact: each sampling round's time in milliseconds
    after t0, and per CPU its speeds in that order (None where a round did not sample it)."""
    rounds = sorted({t for t, _, _ in samples if t0 <= t <= t1})
    index = {t: i for i, t in enumerate(rounds)}
    speeds: dict[str, list[float | None]] = {}
    for t, cpu, speed in samples:
        if t in index:
            speeds.setdefault(cpu, [None] * len(rounds))[index[t]] = speed
    return {"t_ms": [round(1000 * (t - t0)) for t in rounds], "speed": dict(sorted(speeds.items()))}


def parse(text: str) -> list[tuple[float, str, float]]:
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3:
            out.append((float(parts[0]), parts[1], float(parts[2])))
    return out


class ChildSampler:
    """A sampler in a child process for the duration of a `with` block: `argv()` starts it, its
    output is `parse`d into `samples` when the block ends, `during(t0, t1)` summarises them.
    The child dies with its parent, even by SIGKILL."""

    samples: list[Any]

    def argv(self) -> list[str]:
        raise NotImplementedError

    def parse(self, text: str) -> list[Any]:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.out = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self.proc = subprocess.Popen(self.argv(), stdout=self.out, preexec_fn=_die_with_parent)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.seek(0)
        self.samples = self.parse(self.out.read())
        self.out.close()


class Sampler(ChildSampler):
    """`with Sampler(cpus) as s: ...` samples the CPUs' speed while the block runs."""

    def __init__(self, cpus: list[int], interval: float = INTERVAL_S):
        self.cpus, self.interval, self.samples = sorted(set(cpus)), interval, []

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "knee.measure.host.speed", ",".join(map(str, self.cpus)),
                str(self.interval)]

    def parse(self, text: str) -> list[Any]:
        return parse(text)

    def during(self, t0: float, t1: float) -> Section:
        return summary(self.samples, t0, t1)

    def series(self, t0: float, t1: float) -> Section:
        return series(self.samples, t0, t1)


IDLE_PROBE_S = 5.0


def sampled_cpus(engine_cpus: list[int] | None) -> list[int]:
    """The CPUs a session samples: its own (the load generator's) and the engine's."""
    return sorted(os.sched_getaffinity(0) | set(engine_cpus or []))


def idle_probe(cpus: list[int], seconds: float = IDLE_PROBE_S) -> Section:
    """The CPUs' speed over `seconds` with nothing sent to the engine (booted, checked, before
    its first window): a host speed the change cannot move, since no request of the arm runs
    in it (bar.adjust.covariate idle_speed)."""
    with Sampler(cpus) as speed:
        t0 = time.monotonic()
        time.sleep(seconds)
        t1 = time.monotonic()
    return {"seconds": round(t1 - t0, 3), "cpu_speed": speed.during(t0, t1)}


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def main(argv: list[str]) -> int:
    cpus = [int(c) for c in argv[0].split(",") if c]
    interval = float(argv[1]) if len(argv) > 1 else INTERVAL_S
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        now = time.monotonic()
        for cpu, speed in sample(cpus).items():
            print(f"{now:.3f} {cpu} {speed}", flush=True)
        time.sleep(max(0.0, interval - (time.monotonic() - now)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
