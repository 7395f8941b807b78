"""`knee image`: check the image's pinned digest, pull it and record its versions."""

from __future__ import annotations

import argparse
import json

from knee.commands.spec import OUT, PLAN, Command, R
from knee.core import jsonio
from knee.core.errors import KneeError
from knee.plan import runtimes


def run(args: argparse.Namespace) -> int:
    """Check the pinned digest, pull the image and read its engine versions."""
    from datetime import UTC, datetime

    from knee.measure.receipts import VERSIONS
    from knee.measure.runtime import docker

    plan = jsonio.read(args.plan, "plan")
    if not runtimes.of(plan).image or "image" not in plan["runtime"]:
        raise KneeError("runtime.image: the docker runtime needs an image (ref and digest)")
    facts = docker.pull(plan["runtime"]["image"])
    versions = json.loads(docker.run_python(facts["pinned_ref"], VERSIONS))
    jsonio.write(args.out, "image", {**facts, **versions,
                                  "pulled_at": datetime.now(UTC).isoformat(timespec="seconds")})
    return 0


COMMAND = Command(
    "image",
    "check the image's pinned digest, pull it and record its versions",
    f"knee image --plan {R}/plan.json --out {R}/receipts/image.json",
    [PLAN, OUT],
    run)
