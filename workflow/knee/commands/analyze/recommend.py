"""`knee recommend`: which k at which load: a schedule, the crossover, the knee and a paired
verification config, from derived files only."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import RESULTS, Command, R
from knee.core import folderscan, jsonio, layout


def run(args: argparse.Namespace) -> int:
    from knee.analyze.folder import Named
    from knee.publish.recommend import outputs

    named = args.inputs and Named("knee recommend", args.inputs)
    if not named:
        folderscan.checked([args.results], "knee recommend")
    rec = outputs.write(args.results, args.config or outputs.config_of(args.results),
                              jsonio.read(args.results / layout.PLAN, "plan"), named)
    from knee.publish.verdict import schedule_words

    home = args.results / layout.RECOMMEND
    if rec["status"] == "recommended":
        print(f"{home}: {schedule_words(rec)}\ncheck it with the paired run it registers: "
              f"snakemake --config experiment={home}/verify.yaml")
    else:
        print(f"{home}: {rec['status']} ({rec['reason']})")
    return 0 if rec["status"] == "recommended" or args.record_refusal else 1


COMMAND = Command(
    "recommend",
    "which k at which load: a schedule, the crossover, the knee and a paired "
    "verification config, from derived files only",
    f"knee recommend {R}",
    [
        RESULTS, ("--config", {"type": Path, "nargs": "+",
                               "help": "the experiment's config file(s) (default: the copy "
                                       "under workflow/, else the plan's)"}),
        ("--record-refusal", {"action": "store_true",
                              "help": "exit 0 when the data cannot support a recommendation "
                                      "(the files say why)"}),
        ("--inputs", {"type": Path, "nargs": "+",
                      "help": "read only these files of the folder (the rule's declared "
                              "inputs: raw files, window metrics, realized protocol); "
                              "default: the folder's own"})],
    run)
