"""Benchmark: how well `knee recommend` predicted a verification run, and how long it takes.

    python bench/recommend.py [--measured results/ksched-cpu] [--verify results/ksched-cpu-verify]

The verification run is the experiment the recommendation wrote (`recommend/verify.yaml`),
measured in its own boots through the workflow. Prints, per arm and sweep concurrency, the
predicted throughput (with its interval over boot pairs), the measured one (geometric mean over
the verification's pairs) and the error, then the median and max absolute error (target: median
at most 10 %); the candidate-against-control change, predicted and measured (it cancels the
host's speed on the day, which the absolute prediction carries); and the wall time of
`knee recommend` on the measured experiment (it boots nothing and reads derived files; target:
seconds). The recommendation is recomputed into a temporary copy: the published files are
untouched.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from knee.core import jsonio, layout  # noqa: E402
from knee.publish import readme  # noqa: E402

TARGET_PCT = 10.0


def timed_recommend(measured: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / measured.name
        shutil.copytree(measured, copy)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "knee", "recommend", str(copy), "--record-refusal"],
                       check=True, capture_output=True, cwd=ROOT)
        return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measured", type=Path, default=ROOT / "results" / "ksched-cpu")
    ap.add_argument("--verify", type=Path, default=None,
                    help="the verification run (default: results/<measured>-verify)")
    args = ap.parse_args()
    verify = args.verify or args.measured.with_name(f"{args.measured.name}-verify")
    rec = jsonio.read(args.measured / layout.RECOMMENDATION, "recommendation")
    plan = jsonio.read(verify / layout.PLAN, "plan")
    comparison = jsonio.read(verify / layout.COMPARISON, "comparison")
    if "prediction" not in plan:
        print(f"{verify.name} is not a verification run (its plan registers no prediction)")
        return 2
    registered = jsonio.read(verify / layout.PREDICTION, "recommendation")
    shown = readme.predicted(plan, comparison, registered)  # what its README shows, recomputed
    rows = shown["rows"]
    print(f"recommendation: {args.measured.name} (schedule {rec['schedule']}, best fixed k "
          f"{rec['best_fixed_k']}); verification: {verify.name}, "
          f"{len({r['pair'] for r in comparison['rows'] if isinstance(r['pair'], int)})} pairs")
    print(f"{'arm':<10} {'c':>3} {'k':>2} {'predicted':>10} {'interval':>19} {'measured':>9} "
          f"{'error':>7}")
    for r in rows:
        iv = r["interval"]
        ivs = f"{iv[0]:.0f} … {iv[1]:.0f}" if iv else "n/a"
        where = "" if not iv else (" (inside)" if iv[0] <= r["measured"] <= iv[1] else
                                   " (outside)")
        print(f"{r['arm']:<10} {r['concurrency']:>3} {r['k']:>2} {r['predicted']:>10.1f} "
              f"{ivs:>19} {r['measured']:>9.1f} {r['error_pct']:>+6.1f}%{where}")
    med = shown["median_abs"]
    inside = sum(1 for r in rows if r["interval"]
                 and r["interval"][0] <= r["measured"] <= r["interval"][1])
    print(f"prediction error: median absolute {med:.1f} % (target <= {TARGET_PCT:g} %: "
          f"{'met' if med <= TARGET_PCT else 'NOT met'}), max {shown['max_abs']:.1f} %, "
          f"{inside} of {len(rows)} measured inside the predicted interval")
    speed = shown["speed"]
    print("the engine CPU's speed over the sweep windows (M additions/s): "
          + (f"measured run {speed['measured_run']:.1f}, verification {speed['this_run']:.1f} "
             f"({speed['difference_pct']:+.1f} %)" if speed
             else "not sampled in both runs (one predates the sampler)"))
    print("candidate against control, predicted and measured change (the host's speed on the "
          "day cancels):")
    for ch in shown["changes"]:
        iv = ch["measured_interval"]
        ivs = f"{iv[0]:+.1f} … {iv[1]:+.1f} %" if iv else "n/a"
        print(f"  c={ch['concurrency']:>3} k {ch['control_k']} -> {ch['k']}: predicted "
              f"{ch['predicted_pct']:+6.1f} %, measured {ch['measured_pct']:+6.1f} % ({ivs}), "
              f"difference {ch['difference_pct']:+6.1f} points")
    if shown["changes"]:
        print(f"change: median absolute difference {shown['change_median_abs']:.1f} points")
    print(f"knee recommend on {args.measured.name}: {timed_recommend(args.measured):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
