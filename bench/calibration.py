"""Benchmark: how much of the H200's boot-to-boot noise the registered host-speed adjustment
removes, per calibration folder and pooled, and the protocol it predicts.

    python bench/calibration.py [results/calib-h200-35b results/aa-h200-35b ...] [--mde 1.5]

For each folder alone and for all of them pooled (one model, engine and host), `knee
calibrate`'s figures per bar rule: the slope of the log figure on the log host speed over the
figure's own span, the between-boot CV as measured and adjusted, in sample and with each boot
left out of the fit that predicts it (what a registered slope does to a boot it never saw), and
the run-to-run part; then `knee design`'s cheapest protocol to the target MDE for the first
write-up's bar, adjusted and not. Figures knee withholds (the engine failed its sampling check)
are calibrated for their timing alone, and said so. Reads the published raw files; boots nothing.
"""

import argparse
import sys
from pathlib import Path

from knee.analyze.adjust import calibration, design

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ["calib-h200-35b", "aa-h200-35b", "aa-h200-35b-pinned", "ksched-h200-35b"]


def rows(doc: dict) -> list[str]:
    out = []
    for f in doc["figures"]:
        lo = f["left_out"]
        runs = f.get("runs")
        out.append(f"  {f['rule']:<22} slope {f['slope']:+.3f} (r2 {f['r2']:.2f}, {f['boots']} "
                   f"boots)  CV {f['unadjusted_cv_pct']:.2f}% -> {f['adjusted_cv_pct']:.2f}% in "
                   f"sample, {lo['unadjusted_cv_pct']:.2f}% -> {lo['adjusted_cv_pct']:.2f}% left "
                   f"out (variance x{lo['variance_ratio']:.2f})"
                   + (f"; run-to-run {runs['within_cv_pct']:.2f}%, between boots "
                      f"{runs['between_cv_pct']:.2f}%" if runs else "")
                   + f"; speed over {'+'.join(f['speed_over'])}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="*", type=Path,
                    default=[ROOT / "results" / n for n in FOLDERS])
    ap.add_argument("--mde", type=float, default=1.5)
    ap.add_argument("--config", type=Path, default=ROOT / "config" / "ksched-h200-35b.yaml")
    args = ap.parse_args()
    from knee.plan import config

    for root in args.results:
        doc = calibration.calibrate([root], timing_only=True)
        print(f"{root.name}:" + (" (timing only: knee withholds its figures)"
                                 if doc.get("timing_only") else ""))
        print("\n".join(rows(doc)))
    pooled = calibration.calibrate(args.results, timing_only=True)
    print(f"pooled ({', '.join(r.name for r in args.results)}):")
    print("\n".join(rows(pooled)))
    print(design.report(design.plan_protocol(pooled, config.load(args.config), args.mde)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
