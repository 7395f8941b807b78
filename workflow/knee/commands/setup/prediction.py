"""`knee prediction`: a verification run: seal the recommendation its plan registers in its folder
(the registered bytes, checked against their sha256)."""

from __future__ import annotations

import argparse

from knee.commands.spec import OUT, PLAN, Command, R


def run(args: argparse.Namespace) -> int:
    from knee.plan import prediction

    prediction.seal(args.plan, args.out)
    return 0


COMMAND = Command(
    "prediction",
    "a verification run: seal the recommendation its plan registers in its "
    "folder (the registered bytes, checked against their sha256)",
    f"knee prediction --plan {R}-verify/plan.json "
    f"--out {R}-verify/workflow/recommendation.json",
    [PLAN, OUT],
    run)
