"""`knee servers`: external runtime: check each arm's running server and record what it says of
itself (version, models)."""

from __future__ import annotations

import argparse

from knee.commands.spec import OUT, PLAN, Command, R
from knee.core import jsonio
from knee.core.errors import KneeError
from knee.plan.arms import ARMS


def run(args: argparse.Namespace) -> int:
    """External runtime: each arm's server as it answers before the first session."""
    from knee.measure.runtime.external import External

    plan = jsonio.read(args.plan, "plan")
    found = {}
    for arm in ARMS:
        server = plan["runtime"]["servers"][arm]
        probe = External(server["url"], server.get("metrics_url"), args.out)
        if probe.exited() is not None:
            raise KneeError(f"runtime.servers.{arm}.url: {server['url']}/health does not answer "
                            f"({probe.lost or 'not 200'}); nothing was measured")
        facts = probe.facts()
        found[arm] = {**facts, "packages": {"vllm": facts["version"]}}
    jsonio.write(args.out, "servers", found)
    return 0


COMMAND = Command(
    "servers",
    "external runtime: check each arm's running server and record what it says of "
    "itself (version, models)",
    f"knee servers --plan {R}/plan.json --out {R}/receipts/servers.json",
    [PLAN, OUT],
    run)
