"""`knee campaign`: one page over the experiments of one invocation: which k won where."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import OUT, Command


def run(args: argparse.Namespace) -> int:
    from knee.publish import campaign

    campaign.write(args.results, args.out)
    return 0


COMMAND = Command(
    "campaign",
    "one page over the experiments of one invocation: which k won where",
    "knee campaign --out results/campaign-a-b/README.md results/a results/b",
    [
        OUT, ("results", {"type": Path, "nargs": "+", "help": "the experiments' folders"})],
    run)
