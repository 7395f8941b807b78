"""`knee validate-config`: check an experiment file and plan it, writing nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import Command


def run(args: argparse.Namespace) -> int:
    from knee.plan import config

    cfg = config.validate_here(args.config) if args.here else config.load_checked(args.config)
    print(cfg["name"] if args.print_name else f"{args.config}: valid")
    return 0


COMMAND = Command(
    "validate-config",
    "check an experiment file and plan it, writing nothing",
    "knee validate-config config/ksched.yaml",
    [
        ("config", {"type": Path, "help": "the experiment file"}),
        ("--print-name", {"action": "store_true", "help": "print only the experiment's name"}),
        ("--here", {"action": "store_true",
                    "help": "also check that this machine can boot the sessions: the engine "
                            "CPUs and Python the config names (a session checks them again "
                            "before it boots)"})],
    run)
