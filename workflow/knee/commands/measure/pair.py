"""`knee pair`: simultaneous order: both sessions of a pair at once, each window started
together."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import PLAN, Command, R


def run(args: argparse.Namespace) -> int:
    from knee.measure import together

    together.run_pair(args.plan, args.pair, args.python, args.engine_info)
    return 0


COMMAND = Command(
    "pair",
    "simultaneous order: both sessions of a pair at once, each window started "
    "together",
    f"knee pair --plan {R}/plan.json --pair 1 --python PYTHON",
    [
        PLAN, ("--pair", {"type": int, "required": True, "help": "the pair, e.g. 1"}),
        ("--python", {"required": True, "help": "the engine's python (process runtime)"}),
        ("--engine-info", {"type": Path, "nargs": "?",
                           "help": "engine-info or image receipt of the engine booted"})],
    run)
