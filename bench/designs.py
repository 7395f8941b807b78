"""Benchmark: the noise of each protocol design, from published A/A folders.

    python bench/designs.py results/AA_SEQUENTIAL results/AA_SIMULTANEOUS ...

For every folder (an A/A: both arms the same) and every bar rule, prints the design (its
protocol order), the pairs, the between-pair CV (the standard deviation over pairs of each
pair's effect, in %: the noise a pair's difference carries, all of it noise in an A/A) and the
rule's MDE at that many pairs, from the folder's own comparison/bar.json. Beside it, one
boot's CV (the spread of each boot's figure around its arm's mean over the pairs) and √2 times
it: the spread the pairs' effects would have if the two arms of a pair shared none of each
other's noise, as in a sequential order whose boots are minutes apart. A design that measures
both arms in the same minutes (simultaneous, interleaved) helps where its CV lies under that.
Sequential and both-arms-at-once orders measured on one host compare here. Reads the folders
only; boots nothing.
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


def boot_cv(rule: dict) -> float | None:
    """The pooled SD (%, of the log) of each boot's figure around its arm's mean over the
    pairs; None under two pairs."""
    pairs = [p for p in rule.get("per_pair", []) if p.get("control") and p.get("candidate")]
    if len(pairs) < 2:
        return None
    spread = []
    for arm in ("control", "candidate"):
        logs = [math.log(p[arm]) for p in pairs]
        mean = statistics.fmean(logs)
        spread += [(x - mean) ** 2 for x in logs]
    return 100 * math.sqrt(sum(spread) / (2 * (len(pairs) - 1)))


def rows(root: Path) -> list[dict]:
    plan = jsonio.read(root / layout.PLAN, "plan")
    bar = jsonio.read(root / layout.BAR, "bar")
    order = plan["protocol"]["order"]
    design = order if isinstance(order, str) else "fixed " + "-".join(order)
    return [{"folder": root.name, "design": design, "rule": r["rule"],
             "pairs": len(r.get("per_pair", [])), "cv": between_pair_cv(r),
             "boot_cv": boot_cv(r), "mde": r.get("mde_pct")} for r in bar["rules"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="*", type=Path,
                    default=[ROOT / "results" / n for n in ("aa-h200-35b-pinned",
                                                            "calib-h200-35b")])
    a = ap.parse_args()
    out = [r for root in a.results for r in rows(root)]
    print(f"{'folder':26} {'design':16} {'rule':24} {'pairs':>5} {'CV %':>6} {'boot %':>6} "
          f"{'√2 boot':>7} {'MDE %':>6}")
    for r in out:
        cv, boot = (("–" if v is None else f"{v:.2f}") for v in (r["cv"], r["boot_cv"]))
        apart = "–" if r["boot_cv"] is None else f"{math.sqrt(2) * r['boot_cv']:.2f}"
        mde = "–" if r["mde"] is None or math.isnan(r["mde"]) else f"{r['mde']:.2f}"
        print(f"{r['folder']:26} {r['design']:16} {r['rule']:24} {r['pairs']:>5} {cv:>6} "
              f"{boot:>6} {apart:>7} {mde:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
