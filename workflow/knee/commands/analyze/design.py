"""`knee design`: the protocol planner: per bar rule of a config, the pairs and sweep runs that
reach a target MDE in the least GPU time, from a calibration; or, for the paired single-stream
figure, the pairs and requests a class, from a pilot A/A folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from knee.commands.spec import Command
from knee.core import jsonio
from knee.core.errors import KneeError


def run(args: argparse.Namespace) -> int:
    from knee.analyze.adjust import design, pilot
    from knee.plan import adjust, config

    if not 0 < args.mde < 100:
        raise KneeError(f"--mde: {args.mde}: a target MDE is a percentage above 0 and under 100")
    if (args.calibration is None) == (args.pilot is None):
        raise KneeError("knee design: give --calibration (a knee calibrate file) or --pilot "
                        "(a published A/A folder), one of them")
    cfg = config.load(args.config)
    if args.pilot is not None:
        planned = pilot.plan_from_pilot(args.pilot, cfg, args.mde)
        print(pilot.report(planned))
        block = pilot.protocol_block(planned["best"]) if planned["best"] else None
    else:
        document, _ = adjust.read(args.calibration, f"knee design: {args.calibration}")
        out = design.plan_protocol(document, cfg, args.mde)
        print(design.report(out))
        block = design.protocol_block(out["adjusted"]) if out["adjusted"] else None
    if args.out and block:
        jsonio.atomic_write_text(args.out, block)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if block else 1


COMMAND = Command(
    "design",
    "the protocol planner: per bar rule of a config, the pairs and sweep runs that "
    "reach a target MDE in the least GPU time, from a calibration (or, for the paired "
    "single-stream figure, the pairs and requests a class, from a pilot A/A folder)",
    "knee design --calibration config/calibration/h200-35b.json "
    "--config config/ksched-h200-35b.yaml --mde 1.5",
    [
        ("--calibration", {"type": Path, "help": "a knee calibrate file"}),
        ("--pilot", {"type": Path, "help": "a published A/A folder of the config's model in "
                     "its protocol order: plans the paired single-stream rules' pairs and "
                     "requests from its noise, request by request"}),
        ("--config", {"type": Path, "required": True, "help": "the experiment file"}),
        ("--mde", {"type": float, "required": True,
                   "help": "the target MDE of every rule, in percent"}),
        ("--out", {"type": Path, "help": "also write the protocol block to paste (YAML)"})],
    run)
