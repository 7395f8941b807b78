"""`knee verdict`: a results folder in one line: the bar's verdict and each rule's, with the
interval that decided it."""

from __future__ import annotations

import argparse

from knee.commands.spec import RESULTS, Command, R, existing


def run(args: argparse.Namespace) -> int:
    from knee.publish import verdict

    print(verdict.line(existing(args.results)))
    return 0


COMMAND = Command(
    "verdict",
    "a results folder in one line: the bar's verdict and each rule's, with the "
    "interval that decided it",
    f"knee verdict {R}",
    [RESULTS],
    run)
