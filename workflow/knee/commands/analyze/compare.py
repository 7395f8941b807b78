"""`knee compare`: validate that both arms saw the same requests, then compute the deltas."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from knee.commands.spec import EXIT_INVALID, INPUTS, PLAN, SESSIONS, Command, R
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    from knee.analyze import compare
    from knee.analyze.folder import Named, load_sessions
    from knee.publish.templating import comparison_markdown

    plan = jsonio.read(args.plan, "plan")
    result = compare.compare(plan, load_sessions(plan, args.plan.parent,
                                                 named=Named("knee compare", args.inputs)),
                             prediction=jsonio.read(args.prediction[0], "recommendation")
                             if args.prediction else None)
    jsonio.write(args.out_json, "comparison", result)
    if result["verdict"] != "VALID":
        print(comparison_markdown(result), file=sys.stderr)
        print("comparison INVALID: the arms did not see the same requests; no delta rendered",
              file=sys.stderr)
        return 0 if args.record_invalid else EXIT_INVALID
    return 0


COMMAND = Command(
    "compare",
    "validate that both arms saw the same requests, then compute the deltas",
    f"knee compare --plan {R}/plan.json {SESSIONS} --out-json comparison.json",
    [
        PLAN, INPUTS, ("--out-json", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--prediction", {"type": Path, "nargs": "*", "default": [],
                          "help": "a verification run's registered recommendation (config key "
                                  "prediction), sealed in its folder: its predictions against "
                                  "the throughput measured"}),
        ("--record-invalid", {"action": "store_true",
                              "help": "exit 0 for an INVALID comparison (the README says so)"})],
    run)
