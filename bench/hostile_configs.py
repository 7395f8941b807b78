"""How long each bad config of tests/hostile_cases.py takes to be refused (target: under 5 s)
and how much memory it takes (each command runs under a 2 GiB address-space cap).

    python bench/hostile_configs.py [--only ID,ID]

Runs `knee validate-config FILE` and `snakemake -n --config experiment=FILE` one after the
other for every case and prints each one's wall time and peak resident memory, and whether it
was refused with the case's message and no traceback; then the median and the slowest. (The
Slurm executor plugin asks `scontrol` for the cluster's settings when Snakemake starts: on a
machine with Slurm installed but no controller running, that alone takes 10 s.)
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile_cases import CASES  # noqa: E402

TARGET_S = 5.0


CAP_BYTES = 2 * 2**30


def capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))


def timed(argv: list[str], expect: str) -> tuple[float, float, str]:
    """(wall seconds, peak resident MiB, what went wrong or ""), run under the memory cap."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=capped)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - t0
        out.seek(0)
        text = out.read().decode(errors="replace")
    if proc.returncode == 0:
        wrong = "ACCEPTED"
    elif "Traceback (most recent call last)" in text:
        wrong = "TRACEBACK"
    else:
        wrong = "" if re.search(expect, text) else "OTHER MESSAGE"
    return seconds, usage.ru_maxrss / 1024, wrong


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", default="", help="comma-separated case ids")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    times = {"validate-config": [], "snakemake -n": []}
    peaks = {what: [] for what in times}
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if only and case.id not in only:
                continue
            path = Path(tmp) / f"{case.id}.yaml"
            path.write_bytes(case.file(f"bench-{case.id}"))
            row = []
            # a case of the booting machine (case.here) plans anywhere: --here refuses it
            argvs = [("validate-config", [sys.executable, "-m", "knee", "validate-config",
                                          *["--here"] * case.here, str(path)])]
            if not case.here:
                argvs.append(("snakemake -n", [sys.executable, "-m", "snakemake", "-n",
                                               "--cores", "1", "--config", f"experiment={path}"]))
            for what, argv in argvs:
                seconds, mib, wrong = timed(argv, case.expect)
                times[what].append(seconds)
                peaks[what].append(mib)
                row.append(f"{what} {seconds:5.2f} s {mib:4.0f} MiB {wrong}".rstrip())
            print(f"{case.id:28s} " + "  ".join(row), flush=True)
    for what, ts in times.items():
        if ts:
            met = "yes" if max(ts) < TARGET_S else "NO"
            print(f"{what}: {len(ts)} cases, median {statistics.median(ts):.2f} s, slowest "
                  f"{max(ts):.2f} s; under {TARGET_S:.0f} s: {met}; peak memory "
                  f"{max(peaks[what]):.0f} MiB (cap {CAP_BYTES / 2**20:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
