"""`knee trace`: the chain behind a README number: derived file, raw records, boot, config."""

from __future__ import annotations

import argparse

from knee.commands.spec import RESULTS, Command, R


def run(args: argparse.Namespace) -> int:
    from knee.publish import trace

    print("\n".join(trace.trace(args.results, args.query)))
    return 0


COMMAND = Command(
    "trace",
    "the chain behind a README number: derived file, raw records, boot, config",
    f"knee trace {R} 1418.96",
    [
        RESULTS, ("query", {"help": "a number as the README shows it, or FILE#POINTER"})],
    run)
