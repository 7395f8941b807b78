"""How long each bad config of tests/hostile_cases.py takes to be refused (target: under 5 s).

    python bench/hostile_configs.py [--only ID,ID]

Runs `knee validate-config FILE` and `snakemake -n --config experiment=FILE` one after the
other for every case and prints each one's wall time, then the median and the slowest. (The
Slurm executor plugin asks `scontrol` for the cluster's settings when Snakemake starts: on a
machine with Slurm installed but no controller running, that alone takes 10 s.)
"""

from __future__ import annotations

import argparse
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


def timed(argv: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    return time.perf_counter() - t0, r.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", default="", help="comma-separated case ids")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    times = {"validate-config": [], "snakemake -n": []}
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if only and case.id not in only:
                continue
            path = Path(tmp) / f"{case.id}.yaml"
            path.write_bytes(case.file(f"bench-{case.id}"))
            row = []
            for what, argv in (
                    ("validate-config", [sys.executable, "-m", "knee", "validate-config",
                                         str(path)]),
                    ("snakemake -n", [sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                                      "--config", f"experiment={path}"])):
                seconds, rc = timed(argv)
                times[what].append(seconds)
                row.append(f"{what} {seconds:5.2f} s{'' if rc else ' ACCEPTED'}")
            print(f"{case.id:28s} " + "  ".join(row), flush=True)
    for what, ts in times.items():
        if ts:
            met = "yes" if max(ts) < TARGET_S else "NO"
            print(f"{what}: {len(ts)} cases, median {statistics.median(ts):.2f} s, slowest "
                  f"{max(ts):.2f} s; under {TARGET_S:.0f} s: {met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
