"""`knee figures`: every figure, from derived files only."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import PLAN, Command, R
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    from knee.publish import figures

    drawn = figures.render_all(jsonio.read(args.plan, "plan"),
                               jsonio.read(args.comparison, "comparison"),
                               jsonio.read(args.acceptance, "acceptance")["windows"],
                               args.out_dir, jsonio.read(args.bar, "bar"))
    for stale in {*args.out_dir.glob("*.png"), *args.out_dir.glob("*.svg")} - set(drawn):
        stale.unlink()  # a figure this experiment's instruments no longer draw
    return 0


COMMAND = Command(
    "figures",
    "every figure, from derived files only",
    f"knee figures --plan {R}/plan.json --comparison C --bar B --acceptance A "
    "--out-dir F",
    [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--bar", {"type": Path, "required": True, "help": "bar.json"}),
        ("--acceptance", {"type": Path, "required": True, "help": "acceptance.json"}),
        ("--out-dir", {"type": Path, "required": True, "help": "the figures folder"})],
    run)
