"""`knee tables`: tidy tables for a notebook: comparison rows (CSV), every request (Parquet)."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import INPUTS, PLAN, SESSIONS, Command, R
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    from knee.analyze.folder import Named, load_sessions
    from knee.publish import tables

    plan = jsonio.read(args.plan, "plan")
    rows = tables.comparison_rows(jsonio.read(args.comparison, "comparison"))
    sessions = load_sessions(plan, args.plan.parent, named=Named("knee tables", args.inputs))
    tables.write(rows, args.out_rows)  # only once everything it writes could be read
    tables.write(tables.request_rows(sessions), args.out_requests)
    return 0


COMMAND = Command(
    "tables",
    "tidy tables for a notebook: comparison rows (CSV), every request (Parquet)",
    f"knee tables --plan {R}/plan.json --comparison C {SESSIONS} --out-rows rows.csv "
    "--out-requests requests.parquet",
    [
        PLAN, INPUTS, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--out-rows", {"type": Path, "required": True, "help": "comparison/rows.csv"}),
        ("--out-requests", {"type": Path, "required": True,
                            "help": "raw/requests.parquet"})],
    run)
