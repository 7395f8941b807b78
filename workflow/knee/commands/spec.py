"""What a command declares (Command), the arguments several commands share, the exit codes,
and the checks of a results folder a command is given."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knee.core.errors import KneeError

EXIT_INVALID = 3
EXIT_AUDIT = 4
EXIT_VERDICT = {"PASS": 0, "FAIL": 10, "INCONCLUSIVE": 11, "CONFOUNDED": 12,
                "INVALID": EXIT_INVALID}

# an argument: its name or flag, and argparse's keywords for it
Argument = tuple[str, dict[str, Any]]
PLAN: Argument = ("--plan", {"type": Path, "required": True, "help": "the experiment's plan.json"})
OUT: Argument = ("--out", {"type": Path, "required": True, "help": "the file to write"})
RESULTS: Argument = ("results", {"type": Path, "help": "a results folder (results/NAME)"})
# every receipt a command reads is named on its command line (the rule's declared inputs),
# never looked up beside the plan
BOOTS: Argument = ("--boots", {"type": Path, "nargs": "+", "required": True,
                               "help": "every session's boot receipt, in protocol order"})
INPUTS: Argument = ("--inputs", {"type": Path, "nargs": "+", "required": True,
                                 "help": "every session's boot receipt and raw files, and "
                                         "protocol/realized.json where the run stops by "
                                         "precision: the files it reads (none other)"})
R = "results/ksched-cpu"
SESSIONS = f"--inputs {R}/receipts/*-boot.json {R}/raw/*/*"  # an example's INPUTS


@dataclass(frozen=True)
class Command:
    """A command as `knee --help` lists it and `knee NAME` runs it."""

    name: str
    what: str  # what it does, one line
    example: str
    arguments: list[Argument]
    run: Callable[[argparse.Namespace], int]
    details: str | None = None  # a longer description, for `knee NAME --help`


def nearest(path: Path) -> str:
    """'; did you mean …?' naming the folder beside `path` whose name is closest, or ''."""
    try:
        names = [p.name for p in path.parent.iterdir() if p.is_dir()] if path.parent.is_dir() \
            else []
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=1)
    return f"; did you mean {path.parent / close[0]}?" if close else ""


def existing(folder: Path) -> Path:
    """The results folder a command was given, refused (exit 1) where there is none, naming
    the nearest folder beside it."""
    if not folder.is_dir():
        raise KneeError(f"{folder}: no results folder there{nearest(folder)}")
    return folder
