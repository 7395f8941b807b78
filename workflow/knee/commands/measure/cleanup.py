"""`knee cleanup`: stop engine processes (and containers) an interrupted run left behind."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from knee.commands.spec import Command, R


def run(args: argparse.Namespace) -> int:
    from knee.measure.runtime.process import reap_pidfiles

    for pgid in reap_pidfiles(args.root / ".run"):
        print(f"stopped leftover engine process group {pgid}", file=sys.stderr)
    if args.docker:
        from knee.measure.runtime import docker

        for name in docker.remove_labelled(args.root.name):
            print(f"removed leftover engine container {name}", file=sys.stderr)
    return 0


COMMAND = Command(
    "cleanup",
    "stop engine processes (and containers) an interrupted run left behind",
    f"knee cleanup --root {R} --docker",
    [
        ("--root", {"type": Path, "required": True, "help": "the results folder"}),
        ("--docker", {"action": "store_true",
                      "help": "also remove containers labelled with this experiment"})],
    run)
