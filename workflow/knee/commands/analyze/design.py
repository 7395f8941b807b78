"""`knee design`: the protocol planner: per bar rule of a config, the pairs and sweep runs that
reach a target MDE in the least GPU time, from a calibration."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from knee.commands.spec import Command
from knee.core import jsonio
from knee.core.errors import KneeError


def run(args: argparse.Namespace) -> int:
    from knee.analyze.adjust import design
    from knee.plan import adjust, config

    if not 0 < args.mde < 100:
        raise KneeError(f"--mde: {args.mde}: a target MDE is a percentage above 0 and under 100")
    document, _ = adjust.read(args.calibration, f"knee design: {args.calibration}")
    out = design.plan_protocol(document, config.load(args.config), args.mde)
    print(design.report(out))
    if args.out and out["adjusted"]:
        jsonio.atomic_write_text(args.out, design.protocol_block(out["adjusted"]))
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if out["adjusted"] else 1


COMMAND = Command(
    "design",
    "the protocol planner: per bar rule of a config, the pairs and sweep runs that "
    "reach a target MDE in the least GPU time, from a calibration",
    "knee design --calibration config/calibration/h200-35b.json "
    "--config config/ksched-h200-35b.yaml --mde 1.5",
    [
        ("--calibration", {"type": Path, "required": True, "help": "a knee calibrate file"}),
        ("--config", {"type": Path, "required": True, "help": "the experiment file"}),
        ("--mde", {"type": float, "required": True,
                   "help": "the target MDE of every rule, in percent"}),
        ("--out", {"type": Path, "help": "also write the protocol block to paste (YAML)"})],
    run)
