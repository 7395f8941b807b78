"""`knee decide`: stopping by precision: after pair N, one more pair or stop."""

from __future__ import annotations

import argparse
import sys

from knee.commands.spec import INPUTS, OUT, PLAN, SESSIONS, Command, R
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    """Stopping by precision: after pair N, one more pair or stop (a protocol receipt)."""
    from knee.analyze import looks
    from knee.analyze.folder import Named

    plan = jsonio.read(args.plan, "plan")
    d = jsonio.write(args.out, "decision", looks.decide(
        plan, args.plan.parent, args.pairs, Named("knee decide", args.inputs)))
    print(f"after pair {args.pairs}: {'stop' if d['stop'] else 'one more pair'} ({d['reason']})",
          file=sys.stderr)
    return 0


COMMAND = Command(
    "decide",
    "stopping by precision: after pair N, one more pair or stop",
    f"knee decide --plan {R}/plan.json --pairs 2 {SESSIONS} --out after-pair-2.json",
    [
        PLAN, INPUTS, ("--pairs", {"type": int, "required": True,
                                   "help": "the pairs measured so far"}), OUT],
    run)
