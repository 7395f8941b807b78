"""`knee manifest`: write MANIFEST.sha256: the sha256 of every raw and derived file."""

from __future__ import annotations

import argparse

from knee.commands.spec import RESULTS, Command, R
from knee.core import jsonio, layout


def run(args: argparse.Namespace) -> int:
    from knee.publish import audit

    jsonio.atomic_write_text(args.results / layout.MANIFEST,
                             "\n".join(audit.manifest_lines(args.results)) + "\n")
    return 0


COMMAND = Command(
    "manifest",
    "write MANIFEST.sha256: the sha256 of every raw and derived file",
    f"knee manifest {R}",
    [RESULTS],
    run)
