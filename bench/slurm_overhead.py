"""Benchmark: the reduced experiment of the tests run locally and through Slurm.

    python bench/slurm_overhead.py [--keep]

Needs a Slurm cluster (sudo tools/slurm-up.sh starts a one-node one), the engine environment
and the model. Runs the same reduced config (one pair, every instrument) twice: with
`--cores 2`, then with `--profile profiles/slurm`. Prints both wall times and, per session
job, where the Slurm run's extra time goes: from submission to the session's own start
(sbatch, scheduling, the job step starting Snakemake on the node) and from the session's stop
to Snakemake seeing the job finished (status polling through squeue).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

from knee.core import jsonio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.conftest import reduced_config  # noqa: E402  (the tests' reduced experiment)

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def events(log: str) -> dict:
    """Snakemake's own timeline: when each session was submitted and seen finished."""
    out, stamp, sid, job = {}, None, None, None
    jobs = {}
    for line in log.splitlines():
        if m := STAMP.match(line.strip()):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y").timestamp()
        elif m := re.match(r"\s+jobid: (\d+)", line):
            job = m.group(1)
        elif m := re.match(r"\s+wildcards: sid=([\w-]+)$", line):
            jobs[job] = sid = m.group(1)
            out.setdefault(sid, {})["scheduled"] = stamp
        elif "has been submitted with SLURM jobid" in line and sid:
            out[sid]["submitted"] = stamp
        elif m := re.match(r"Finished jobid: (\d+) \(Rule: session\)", line):
            out[jobs[m.group(1)]]["finished"] = stamp
    return out


def run(argv: list[str], cfg: Path) -> tuple[float, str]:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "snakemake", *argv, "--config", f"experiment={cfg}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(argv)} failed:\n{r.stderr[-3000:]}")
    return time.monotonic() - t0, r.stderr


def iso(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", action="store_true", help="keep the two results folders")
    a = ap.parse_args()
    default = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    work = Path(tempfile.mkdtemp(prefix="knee-slurm-bench-"))
    modes = {"local": ["--cores", "2"], "slurm": ["--profile", "profiles/slurm", "--jobs", "4"]}
    roots = []
    try:
        print("mode   wall s  sessions s  outside sessions s")
        for mode, argv in modes.items():
            (work / mode).mkdir()
            path = reduced_config(work / mode, yaml.safe_load(yaml.safe_dump(default)),
                                  f"bench-{mode}")
            name = yaml.safe_load(path.read_text(encoding="utf-8"))["name"]
            root = ROOT / "results" / name
            roots.append(root)
            wall, log = run(argv, path)
            spans = {}
            for boot in sorted((root / "receipts").glob("*-boot.json")):
                sid = boot.name.removesuffix("-boot.json")
                stop = jsonio.read(root / "receipts" / f"{sid}-stop.json", "stop")
                spans[sid] = (iso(jsonio.read(boot, "boot")["started_at"]),
                              iso(stop["stopped_at"]))
            inside = sum(b - a for a, b in spans.values())
            print(f"{mode:5} {wall:7.1f}  {inside:10.1f}  {wall - inside:18.1f}", flush=True)
            if mode == "slurm":
                for sid, ev in events(log).items():
                    start, stop = spans[sid]
                    print(f"  {sid}: submitted -> session started {start - ev['submitted']:5.1f}"
                          f" s; session stopped -> seen finished {ev['finished'] - stop:5.1f} s"
                          " (1 s resolution)")
    finally:
        if not a.keep:
            for root in roots:
                subprocess.run(["chmod", "-R", "u+w", str(root)], check=False)
                shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
