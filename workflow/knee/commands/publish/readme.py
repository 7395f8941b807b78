"""`knee readme`: the results README, every number linked to the file it came from."""

from __future__ import annotations

import argparse
from pathlib import Path

from knee.commands.spec import BOOTS, OUT, PLAN, Command, R
from knee.core import jsonio


def run(args: argparse.Namespace) -> int:
    from knee.publish import htmlpage, readme

    plan = jsonio.read(args.plan, "plan")

    caches = {r["session"]: r for r in (jsonio.read(p, "cache") for p in args.caches)}
    stops = {r["session"]: r for r in (jsonio.read(p, "stop") for p in args.stops)}

    text = readme.render(plan, jsonio.read(args.comparison, "comparison"),
                         jsonio.read(args.bar, "bar"),
                         [jsonio.read(p, "boot") for p in args.boots],
                         jsonio.read(args.acceptance, "acceptance"),
                         caches=caches, stops=stops,
                         recommendation=args.recommendation and jsonio.read(
                             args.recommendation, "recommendation"))
    jsonio.atomic_write_text(args.out, text)
    if args.out_html:
        jsonio.atomic_write_text(args.out_html, htmlpage.render(text))
    return 0


COMMAND = Command(
    "readme",
    "the results README, every number linked to the file it came from",
    f"knee readme --plan {R}/plan.json --comparison C --bar B --acceptance A "
    "--boots BOOT... --stops STOP... --caches CACHE... --recommendation R "
    "--out README.md --out-html index.html",
    [
        PLAN, ("--comparison", {"type": Path, "required": True, "help": "comparison.json"}),
        ("--bar", {"type": Path, "required": True, "help": "bar.json"}),
        ("--acceptance", {"type": Path, "required": True, "help": "acceptance.json"}), BOOTS,
        ("--stops", {"type": Path, "nargs": "*", "default": [],
                     "help": "the sessions' stop receipts"}),
        ("--caches", {"type": Path, "nargs": "*", "default": [],
                      "help": "the sessions' compile-cache receipts (none: an external server)"}),
        ("--recommendation", {"type": Path, "help": "recommend/recommendation.json"}), OUT,
        ("--out-html", {"type": Path, "help": "also write the README as one styled page "
                                              "(index.html)"})],
    run)
