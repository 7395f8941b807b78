"""`knee crate`: the results folder as a Workflow Run RO-Crate: ro-crate-metadata.json, and the
Snakefile, config and prompt files copied under workflow/."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import RESULTS, Command, R


def run(args: argparse.Namespace) -> int:
    from knee.publish import crate

    crate.write(args.results, args.snakefile, args.config)
    return 0


COMMAND = Command(
    "crate",
    "the results folder as a Workflow Run RO-Crate: ro-crate-metadata.json, and the "
    "Snakefile, config and prompt files copied under workflow/",
    f"knee crate {R} --snakefile Snakefile --config config/config.yaml",
    [
        RESULTS, ("--snakefile", {"type": Path, "required": True, "help": "the workflow's"}),
        ("--config", {"type": Path, "nargs": "+", "required": True,
                      "help": "the experiment's config file(s)"})],
    run)
