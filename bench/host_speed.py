"""Benchmark: how steady is this host's CPU speed, with nothing of knee running?

    python bench/host_speed.py [--seconds 180] [--window 30]

Samples each CPU's speed on a fixed piece of work (knee.measure.host.speed: the same sampler every
window records) every 0.25 s while the machine is idle, then prints per CPU the distribution,
how long the host stays in a slow or fast state (split halfway between the 10th and 90th
percentile), the correlation between the CPUs' simultaneous samples, and the spread of the
median speed over consecutive windows as long as an instrument window (--window seconds): the
floor under any boot-to-boot spread of the engine that runs on it.
"""

import argparse
import itertools
import os
import statistics
import sys
import time

from knee.analyze.noise import spread_pct
from knee.measure.host import speed as hostspeed


def runs(states: list[bool]) -> list[int]:
    """Lengths of consecutive runs of one state."""
    out, count = [], 1
    for a, b in itertools.pairwise(states):
        if a == b:
            count += 1
        else:
            out.append(count)
            count = 1
    return [*out, count] if states else out


def report_cpu(cpu: str, speeds: list[float], interval: float, per_window: int) -> float:
    q = statistics.quantiles(speeds, n=10)
    cut = (q[0] + q[-1]) / 2
    slow = [s < cut for s in speeds]
    dwell = [n * interval for n in runs(slow)]
    print(f"{cpu}: {len(speeds)} samples, M additions/s p10 {q[0]:.1f}, median "
          f"{statistics.median(speeds):.1f}, p90 {q[-1]:.1f} (p90/p10 {q[-1] / q[0]:.2f}); "
          f"slow (< {cut:.1f}) {sum(slow) / len(slow):.0%} of the time; a state lasts "
          f"{statistics.median(dwell):.1f} s median, {max(dwell):.1f} s longest")
    medians = [statistics.median(speeds[i:i + per_window])
               for i in range(0, len(speeds) - per_window + 1, per_window)]
    if len(medians) > 1:
        print(f"  median speed of {len(medians)} consecutive windows: "
              + ", ".join(f"{m:.1f}" for m in medians)
              + f"; spread {spread_pct(medians):.1f} %")
        return spread_pct(medians)
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=180)
    ap.add_argument("--window", type=float, default=30)
    a = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    with hostspeed.Sampler(cpus) as sampler:
        time.sleep(a.seconds)
    per_cpu: dict[str, list[float]] = {}
    for _, cpu, speed in sampler.samples:
        per_cpu.setdefault(cpu, []).append(speed)
    per_window = max(1, int(a.window / hostspeed.INTERVAL_S))
    spreads = [report_cpu(cpu, v, hostspeed.INTERVAL_S, per_window)
               for cpu, v in sorted(per_cpu.items())]
    if len(per_cpu) > 1:
        first, second = (per_cpu[c] for c in sorted(per_cpu)[:2])
        n = min(len(first), len(second))
        print(f"correlation between {' and '.join(sorted(per_cpu)[:2])}'s simultaneous "
              f"samples: {statistics.correlation(first[:n], second[:n]):+.2f}")
    print(f"the idle host's own speed spreads {min(spreads):.1f}-{max(spreads):.1f} % across "
          f"{a.window:.0f} s windows (knee's target for the engine's boot-to-boot spread: 5 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
