"""Benchmark: re-render a finished experiment's figures and README from its raw data.

    python bench/rerender.py [--experiment config/config.yaml] [--repeat 3]

Forces the figure and README rules to run again (and the manifest after them) and prints the
wall time of each run, the number of engine processes seen while it ran (polled every 20 ms;
must be 0) and whether any raw file changed (must not). Target: under 10 s on a 2-core machine.
"""

import argparse
import hashlib
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.name.endswith(".metrics.json"):
            h.update(p.as_posix().encode() + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def watch_engines(stop: threading.Event, seen: set) -> None:
    while not stop.is_set():
        out = subprocess.run(["pgrep", "-f", "vllm.entrypoints"], capture_output=True, text=True)
        seen.update(out.stdout.split())
        time.sleep(0.02)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--experiment", default="config/config.yaml")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    name = yaml.safe_load((ROOT / a.experiment).read_text(encoding="utf-8"))["name"]
    raw = ROOT / "results" / name / "raw"
    if not (ROOT / "results" / name / "README.md").exists():
        print(f"results/{name} is not a finished experiment: run it first", file=sys.stderr)
        return 1
    before = digest(raw)
    baseline = set(subprocess.run(["pgrep", "-f", "vllm.entrypoints"], capture_output=True,
                                  text=True).stdout.split())
    cmd = [sys.executable, "-m", "snakemake", "figures", "readme", "--cores", "1",
           "--forcerun", "figures_render", "readme", "--config", f"experiment={a.experiment}"]
    for i in range(a.repeat):
        seen: set = set()
        stop = threading.Event()
        t = threading.Thread(target=watch_engines, args=(stop, seen))
        t.start()
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        stop.set()
        t.join()
        if r.returncode != 0:
            print(r.stderr[-2000:], file=sys.stderr)
            return 1
        ran = sorted({line.split()[-1].rstrip(":") for line in r.stderr.splitlines()
                      if line.startswith(("rule ", "localrule "))})
        print(f"run {i + 1}: re-render wall {wall:.2f} s, engine processes started "
              f"{len(seen - baseline)}, rules run: {', '.join(ran)}")
    print(f"raw files unchanged: {digest(raw) == before}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
