"""`knee plan`: write plan.json: arms, session order, instruments, the bar and its sha256."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import OUT, Command, R


def run(args: argparse.Namespace) -> int:
    from knee.plan import config, configfile, planfile

    raw = configfile.load_all(args.config)
    if args.name:
        raw["name"] = configfile.check_name(args.name, f"--name {args.name!r}")
    _, plan = config.plan_config(raw, configfile.source_of(args.config), args.repo)
    planfile.write_plan(args.out, plan)
    return 0


COMMAND = Command(
    "plan",
    "write plan.json: arms, session order, instruments, the bar and its sha256",
    f"knee plan --config config/config.yaml --out {R}/plan.json",
    [
        ("--config", {"type": Path, "nargs": "+", "required": True,
                      "help": "the experiment file (several: merged in order, as Snakemake "
                              "merges --configfile files)"}), OUT,
        ("--name", {"help": "the experiment's name, if not the file's"}),
        ("--repo", {"type": Path, "default": Path("."), "help": "the workflow's git checkout"})],
    run)
