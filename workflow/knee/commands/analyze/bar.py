"""`knee bar`: judge the pre-registered bar: PASS, FAIL or INCONCLUSIVE per rule."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from knee.commands.spec import BOOTS, EXIT_VERDICT, OUT, PLAN, Command, R
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    """Judge the bar; with --exit-verdict, exit 0 PASS, 10 FAIL, 11 INCONCLUSIVE,
    12 CONFOUNDED, 3 INVALID."""
    from knee.analyze.bar import judge_plan

    plan = jsonio.read(args.plan, "plan")
    comparison = jsonio.read(args.comparison, "comparison")
    bar = judge_plan(plan, comparison, [jsonio.read(p, "boot") for p in args.boots])
    jsonio.write(args.out, "bar", bar)
    from knee.publish import templating

    if args.out_md:
        jsonio.atomic_write_text(args.out_md, templating.comparison_markdown(comparison, bar))
    if args.out_html:
        jsonio.atomic_write_text(args.out_html, templating.verdict_html(comparison, bar))
    print(f"bar {bar['verdict']}: " + "; ".join(f"{r['rule']} {r['verdict']}"
                                                 for r in bar["rules"]), file=sys.stderr)
    return EXIT_VERDICT[bar["verdict"]] if args.exit_verdict else 0


COMMAND = Command(
    "bar",
    "judge the pre-registered bar: PASS, FAIL or INCONCLUSIVE per rule",
    f"knee bar --plan {R}/plan.json --comparison C --boots {R}/receipts/*-boot.json "
    "--out bar.json --exit-verdict",
    [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        BOOTS, OUT, ("--out-md", {"type": Path, "help": "also write comparison.md: validation and "
                                                 "verdicts"}),
        ("--out-html", {"type": Path, "help": "also write verdict.html: the verdicts and the "
                                              "comparison as one page (the Snakemake report)"}),
        ("--exit-verdict", {"action": "store_true",
                            "help": "exit 0 PASS, 10 FAIL, 11 INCONCLUSIVE, 12 CONFOUNDED, "
                                    "3 INVALID"})],
    run)
