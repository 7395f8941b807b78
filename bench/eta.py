"""Benchmark: how well the time left that a starting session prints foretells the end of the
run, on published folders.

    python bench/eta.py [results/NAME ...]   (default: every published folder)

For every folder whose sessions all stopped, and every session after the first, it replays
what that session said as it started (knee.measure.progress.time_left: the sessions still to
run at the pace of those done, from the first boot) against the run's real end (the last stop
receipt), and prints each error as a share of the run's whole time, then the largest. Target:
within 20 % on the default experiment's published run (results/ksched-cpu). Folders measured
over several leases count the time between leases as the run's, and show it. Reads receipts
only; boots nothing.
"""

import argparse
import sys
from datetime import datetime
from pathlib import Path

from knee.core import jsonio, layout
from knee.measure.progress import time_left

ROOT = Path(__file__).resolve().parents[1]


def at(root: Path, sid: str, kind: str, field: str) -> float:
    return datetime.fromisoformat(jsonio.read(root / layout.receipt(sid, kind), kind)[field]) \
        .timestamp()


def errors(root: Path) -> list[float] | None:
    """Each session's foretold end less the real end, in % of the run's time (None: a session
    did not stop)."""
    plan = jsonio.read(root / layout.PLAN, "plan")
    sids = [s["id"] for s in plan["protocol"]["sessions"]]
    if not all((root / layout.receipt(s, "stop")).is_file() for s in sids):
        return None
    starts = [at(root, s, "boot", "started_at") for s in sids]
    end = max(at(root, s, "stop", "stopped_at") for s in sids)
    whole = end - starts[0]
    out = []
    for started in starts[1:]:
        done = sum(at(root, s, "stop", "stopped_at") <= started for s in sids)
        left = time_left(len(sids), done, started - starts[0])
        if left is not None:
            out.append(100 * (started + left - end) / whole)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path)
    folders = ap.parse_args().folders or sorted(
        p.parent for p in (ROOT / "results").glob(f"*/{layout.MANIFEST}"))
    for root in folders:
        errs = errors(root)
        if errs is None:
            print(f"{root.name}: not every session stopped")
        elif errs:
            shown = ", ".join(f"{e:+.0f}" for e in errs)
            print(f"{root.name}: {len(errs)} estimates, error % of the run: {shown}; "
                  f"largest {max(map(abs, errs)):.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
