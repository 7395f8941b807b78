"""Benchmark: the A/A false-positive rate and the MDE of the default experiment on this machine.

    python bench/aa.py [results/ksched-cpu results/aa-cpu ...] [--config config/config.yaml]

Takes every published boot of the first folder's control arm (in the order they booted, paired
two by two), compares them as an A/A experiment through knee's own comparison and bar, and
prints: the share of across-pairs 95 % intervals that exclude zero (a calibrated interval: about
5 %), each bar rule of the config judged as parity within its boot noise, the spread of each
bar point across boots (the noise target: median <= 5 %), and the MDE of each bar rule at 2 to 8
pairs from the between-pair spread measured here. Boots nothing: run the experiments first
(`make run`, `snakemake --cores all --config experiment=config/aa-cpu.yaml`).
"""

import argparse
import math
import sys
from pathlib import Path

from knee.analyze import aa, inference
from knee.plan import config

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="*", type=Path,
                    default=[ROOT / "results" / "ksched-cpu", ROOT / "results" / "aa-cpu"])
    ap.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml",
                    help="whose bar rules to judge (as parity at their boot noise)")
    a = ap.parse_args()
    cfg = config.load(a.config)
    alpha = cfg["bar"]["alpha"]
    rules = [{**{k: v for k, v in r.items() if k not in ("min_gain_pct", "within_pct")},
              "within_pct": 5} for r in cfg["bar"]["rules"]]
    result = aa.calibrate([p for p in a.results if (p / "plan.json").exists()], rules, alpha)
    print(f"boots of one arm, in boot order: {', '.join(result['boots'])}")
    print(f"A/A pairs: {result['pairs']}; comparison {result['comparison']['verdict']}")
    rate = 100 * result["excluding_zero"] / result["rows"] if result["rows"] else math.nan
    print(f"across-pairs 95 % intervals excluding zero: {result['excluding_zero']} of "
          f"{result['rows']} ({rate:.1f} %; calibrated: about 5 %)")
    spread = result["boot_spread_pct"]
    for name, value in spread["per_rule"].items():
        print(f"  spread across boots, {name}: {value:.1f} %")
    print(f"median spread across boots over the bar's points: {spread['median']:.1f} % "
          f"(target <= 5 %: {'met' if spread['median'] <= 5 else 'NOT met'})")
    print(f"bar as parity within ±5 % (alpha {alpha}): {result['bar']['verdict']}")
    for r in result["bar"]["rules"]:
        sd = None
        if r.get("per_pair"):
            eff = inference.effect([inference.log_ratio(p["control"], p["candidate"])
                                    for p in r["per_pair"]])
            sd = eff.sd
        mdes = aa.mde_by_pairs(r, sd, alpha)
        shown = ", ".join(f"{n} pairs {v:.1f} %" for n, v in mdes.items())
        interval = r.get("interval") or [math.nan, math.nan]
        print(f"  {r['rule']}: {r['verdict']}, estimate {r.get('estimate', math.nan):+.2f} %, "
              f"interval {interval[0]:+.1f} .. {interval[1]:+.1f} %; MDE {shown or 'n/a'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
