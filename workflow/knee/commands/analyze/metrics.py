"""`knee metrics`: one window's metrics from its raw file and scrapes."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import OUT, Command, R
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    from knee.analyze.window.prom import window_metrics

    raw = jsonio.read(args.raw, "raw")
    result = window_metrics(raw, jsonio.read(args.boot, "boot"), args.before, args.after,
                            args.knee_threshold)
    jsonio.write(args.out, "metrics", {**result, "scrapes": [str(args.before), str(args.after)]})
    return 0


COMMAND = Command(
    "metrics",
    "one window's metrics from its raw file and scrapes",
    f"knee metrics --raw {R}/raw/1-control/sweep.json --before B --after A "
    "--boot BOOT --knee-threshold 0.2 --out M",
    [
        ("--raw", {"type": Path, "required": True, "help": "the window's raw file"}),
        ("--before", {"type": Path, "required": True, "help": "the scrape before the window"}),
        ("--after", {"type": Path, "required": True, "help": "the scrape after the window"}),
        ("--boot", {"type": Path, "required": True, "help": "the session's boot receipt"}),
        ("--knee-threshold", {"type": float, "required": True,
                              "help": "acceptance under which a draft position is the knee"}),
        OUT],
    run)
