"""`knee audit`: recompute every number from the raw files and check every hash."""

from __future__ import annotations

import argparse
import sys

from knee.commands.spec import EXIT_AUDIT, RESULTS, Command, R, existing

DETAILS = """Recompute a results folder from its raw measurements up and report every
disagreement (exit 4), naming the file and the field:
  - plan.json re-made from the folder's copy of the config (workflow/config.yaml), and the
    bar's and config's sha256 recomputed from content and held against every boot receipt
    (each written before its session measured anything): a bar not registered before a boot
    is a problem;
  - each boot receipt's session, pair, arm, resolved server settings and argv against the
    plan's arm for that session;
  - each raw file bound to its session (its session field; the scrapes' engine process start
    time inside that boot) and, for sessions that recorded them, to the sha256 its stop
    receipt took when the session published;
  - every derived file recomputed and compared: window metrics, comparison, bar, tables,
    comparison.md, verdict.html, acceptance.json, every figure, recommend/, README.md;
  - MANIFEST.sha256 and the RO-Crate against the files.
Checks a folder cannot support (an older folder lacks some receipt fields) are listed as
"not possible". What one folder cannot prove about itself: receipts and raw files forged
together, consistently with each other, with plan.json and with the config copy, pass
(nothing in the folder is signed); where the folder lies in a git repository, the audit says
whether plan.json was committed before the receipts and whether its bar changed since."""


def run(args: argparse.Namespace) -> int:
    """Problems and the result on stdout, what is checked and the notes on stderr; exit 1 where
    there is no folder to audit, 4 where the folder disagrees with its recomputation."""
    from knee.publish import audit

    problems, notes = audit.examine(
        existing(args.results), say=lambda m: print(f"audit: {m}", file=sys.stderr, flush=True))
    for n in [*notes, audit.LIMITS]:
        print(f"note: {n}", file=sys.stderr)
    for p in problems:
        print(p)
    print(f"{args.results}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 0 if not problems else EXIT_AUDIT


COMMAND = Command(
    "audit",
    "recompute every number from the raw files and check every hash",
    f"knee audit {R}",
    [RESULTS],
    run, details=DETAILS)
