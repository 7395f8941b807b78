"""`knee realized`: the realized protocol: how many pairs ran and every look's decision."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import OUT, PLAN, Command, R
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    """The realized protocol: how many pairs ran and every look's decision."""
    from knee.analyze import looks

    plan = jsonio.read(args.plan, "plan")
    jsonio.write(args.out, "realized", looks.realized(
        plan, [jsonio.read(p, "decision") for p in args.decisions]))
    return 0


COMMAND = Command(
    "realized",
    "the realized protocol: how many pairs ran and every look's decision",
    f"knee realized --plan {R}/plan.json --out realized.json D2 D3",
    [
        PLAN, OUT, ("decisions", {"type": Path, "nargs": "*",
                                  "help": "the decisions after each pair"})],
    run)
