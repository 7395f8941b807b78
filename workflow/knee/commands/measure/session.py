"""`knee session`: one session: boot, every instrument with its scrapes, stop."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import PLAN, Command, R


def run(args: argparse.Namespace) -> int:
    from knee.measure import session

    session.run(args.plan, args.id, args.plan.parent, args.python, args.engine_info)
    return 0


COMMAND = Command(
    "session",
    "one session: boot, every instrument with its scrapes, stop",
    f"knee session --plan {R}/plan.json --id 1-control --python PYTHON",
    [
        PLAN, ("--id", {"required": True, "help": "the session, e.g. 1-control"}),
        ("--python", {"required": True, "help": "the engine's python (process runtime)"}),
        ("--engine-info", {"type": Path, "nargs": "?",
                           "help": "engine-info or image receipt of the engine booted"})],
    run)
