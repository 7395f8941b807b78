"""Benchmark: an experiment judged on the registered host-speed adjustment, against its
targets, recomputed from the published raw files.

    python bench/adjusted.py [results/ksched-h200-35b-adj]

Loads every session's raw files and receipts, compares the arms and judges the registered bar
as `knee compare` and `knee bar` do (boots nothing), and prints per rule: the verdict on the
adjusted interval and as measured, the balance check, the MDE the calibration predicted for
this protocol (from its noise as estimated to the upper 90 % bound a protocol is planned from)
against the realized one (target: at most the bound), and, for a folder measured on
several hosts, each host's spread of the per-pair effect and the rule judged without the pairs
whose sessions ran on two hosts.
"""

import argparse
import sys
from pathlib import Path
from typing import Any

from knee.analyze import compare
from knee.analyze.adjust import design
from knee.analyze.bar import judge_plan
from knee.core import jsonio, layout
from knee.publish import audit

ROOT = Path(__file__).resolve().parents[1]


def recompute(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The plan and its bar, judged again from the folder's raw files."""
    plan = jsonio.read(root / layout.PLAN, "plan")
    loaded = audit.load_sessions(plan, root)
    boots = [loaded[(s["pair"], s["arm"])]["boot"] for s in audit.realized_sessions(plan, root)]
    return dict(plan), judge_plan(plan, compare.compare(plan, loaded), boots)


def ci(interval: list[float] | None) -> str:
    return "–" if not interval else f"{interval[0]:+.2f} … {interval[1]:+.2f} %"


def rule_lines(plan: dict[str, Any], bar: dict[str, Any]) -> list[str]:
    out = []
    for row in (design.realized(plan, bar) or {"rows": []})["rows"]:
        measured = row["as_measured"]
        low, high = row["predicted_mde"]
        out.append(
            f"  {row['rule']:<22} {row['verdict']:<12} {row['estimate']:+.2f} % "
            f"({ci(row['interval'])}); as measured {measured['verdict']} "
            f"{measured['estimate']:+.2f} % ({ci(measured['interval'])}); balance "
            f"{row['balance']['estimate_pct']:+.2f} % ({ci(row['balance']['interval'])}); MDE "
            f"predicted {low:.2f}–{high:.2f} %, realized {row['mde_pct']:.2f} % "
            f"({'within' if row['mde_pct'] <= high else 'ABOVE'} the bound the protocol was "
            "planned from)")
    return out


def host_lines(bar: dict[str, Any]) -> list[str]:
    hosts = bar.get("hosts")
    if not hosts:
        return ["  measured on one host"]
    out = [f"  host {h['boot_id'][:8]}: pairs {', '.join(map(str, h['pairs']))}"
           for h in hosts["hosts"]]
    out += [f"  pair {s['pair']} split over {', '.join(h[:8] for h in s['hosts'])}"
            for s in hosts["split_pairs"]]
    for r in hosts["rules"]:
        spreads = ", ".join(
            f"{h['boot_id'][:8]} " + ("–" if h["sd_pct"] is None else
                                     f"{h['sd_pct']:.2f} -> {h['sd_used_pct']:.2f} %")
            for h in r["per_host"])
        out.append(f"  {r['rule']:<22} per-pair SD as measured -> judged: {spreads}")
        if alone := r.get("without_split_pairs"):
            out.append(f"  {'':<22} without split pairs ({alone['pairs']}): {alone['verdict']} "
                       f"{alone['estimate']:+.2f} % ({ci(alone['interval'])})")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("folder", nargs="?", type=Path,
                    default=ROOT / "results" / "ksched-h200-35b-adj")
    args = ap.parse_args()
    plan, bar = recompute(args.folder)
    print(f"{plan['name']}: bar {bar['verdict']} over {bar['pairs']} pairs "
          "(recomputed from the raw files)")
    for line in rule_lines(plan, bar) + host_lines(bar):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
