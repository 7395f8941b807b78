"""Benchmark: the noise of each protocol design, from published A/A folders.

    python bench/designs.py results/AA_SEQUENTIAL results/AA_SIMULTANEOUS ...

For every folder (an A/A: both arms the same) and every bar rule, prints the design (its
protocol order), the pairs, the between-pair CV (the standard deviation over pairs of each
pair's effect, in %: the noise a pair's difference carries, all of it noise in an A/A) and the
rule's MDE at that many pairs, from the folder's own comparison/bar.json. Sequential and
simultaneous order measured on one host compare here (issue: a simultaneous design's
between-pair CV under 0.5 % on every bar figure). Reads the folders only; boots nothing.
"""

import argparse
import math
import statistics
import sys
from pathlib import Path

from knee.core import jsonio, layout

ROOT = Path(__file__).resolve().parents[1]


def between_pair_cv(rule: dict) -> float | None:
    """The sample standard deviation of the pairs' effects (%), None under two pairs."""
    deltas = [p["delta_pct"] for p in rule.get("per_pair", []) if p.get("delta_pct") is not None]
    return statistics.stdev(deltas) if len(deltas) > 1 else None


def rows(root: Path) -> list[dict]:
    plan = jsonio.read(root / layout.PLAN, "plan")
    bar = jsonio.read(root / layout.BAR, "bar")
    order = plan["protocol"]["order"]
    design = order if isinstance(order, str) else "fixed " + "-".join(order)
    return [{"folder": root.name, "design": design, "rule": r["rule"],
             "pairs": len(r.get("per_pair", [])), "cv": between_pair_cv(r),
             "mde": r.get("mde_pct")} for r in bar["rules"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="*", type=Path,
                    default=[ROOT / "results" / n for n in ("aa-h200-35b-pinned",
                                                            "calib-h200-35b")])
    a = ap.parse_args()
    out = [r for root in a.results for r in rows(root)]
    print(f"{'folder':24} {'design':16} {'rule':24} {'pairs':>5} {'CV %':>6} {'MDE %':>6}")
    for r in out:
        cv = "–" if r["cv"] is None else f"{r['cv']:.2f}"
        mde = "–" if r["mde"] is None or math.isnan(r["mde"]) else f"{r['mde']:.2f}"
        print(f"{r['folder']:24} {r['design']:16} {r['rule']:24} {r['pairs']:>5} {cv:>6} "
              f"{mde:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
