"""`knee acceptance`: one table of every window's acceptance figures, and each arm's over the boots
per point."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import OUT, Command, R
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    from knee.analyze import acceptance

    windows = [jsonio.read(p, "metrics") for p in args.metrics]
    jsonio.write(args.out, "acceptance",
                 acceptance.document(windows, args.metrics, args.confidence))
    return 0


COMMAND = Command(
    "acceptance",
    "one table of every window's acceptance figures, and each arm's over the "
    "boots per point",
    f"knee acceptance --out {R}/comparison/acceptance.json M1 M2",
    [
        OUT, ("metrics", {"type": Path, "nargs": "+", "help": "window metrics files"}),
        ("--confidence", {"type": float, "default": 0.95,
                          "help": "the intervals' level over the boots (analysis.confidence)"})],
    run)
