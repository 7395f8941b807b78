"""`knee calibrate`: from A/A folders: per bar figure, its slope on the host CPUs' speed, the noise
left with and without it, and a session's costs (bar.adjust names the file)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from knee.commands.spec import OUT, Command
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    from knee.analyze.adjust import calibration

    doc = jsonio.write(args.out, "calibration",
                       calibration.calibrate(args.results, args.timing_only, args.covariate))
    for f in doc["figures"]:
        out = f["left_out"]
        print(f"{f['rule']}: slope {f['slope']:+.3f} (r2 {f['r2']}), between-boot CV "
              f"{out['unadjusted_cv_pct']:.2f}% -> {out['adjusted_cv_pct']:.2f}% adjusted "
              f"(each boot left out; {f['boots']} boots)", file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


COMMAND = Command(
    "calibrate",
    "from A/A folders: per bar figure, its slope on the host CPUs' speed, the "
    "noise left with and without it, and a session's costs (bar.adjust names "
    "the file)",
    "knee calibrate results/calib-h200-35b --out config/calibration/h200-35b.json",
    [("results", {"type": Path, "nargs": "+",
                  "help": "A/A results folders of one model, engine and host"}),
     OUT, ("--timing-only", {"action": "store_true",
                             "help": "also calibrate the timing of figures knee "
                                     "withholds (the engine failed its sampling "
                                     "check); the file records which"}),
     ("--covariate", {"choices": ["host_speed", "idle_speed"],
                      "default": "host_speed",
                      "help": "host_speed: the CPUs' speed over each figure's "
                              "span; idle_speed: over each boot's idle probe "
                              "(bar.adjust.covariate)"})],
    run)
