"""Reading a results folder: the sessions' receipts and raw files, and the bar's verdict."""

from __future__ import annotations

from pathlib import Path

from knee import jsonio

INSTRUMENTS = ("sweep", "fixture", "depth", "probe")  # in the order a session runs them


def instrument_names(plan: dict) -> list[str]:
    return [name for name in INSTRUMENTS if name in plan["instruments"]]


def load_sessions(plan: dict, root: Path) -> dict:
    out = {}
    for s in plan["protocol"]["sessions"]:
        files = {"boot": root / "receipts" / f"{s['id']}-boot.json"}
        files.update({n: root / "raw" / s["id"] / f"{n}.json" for n in instrument_names(plan)})
        out[(s["pair"], s["arm"])] = {
            "boot": jsonio.read(files.pop("boot"), "boot"),
            "raw": {n: jsonio.read(path, "raw") for n, path in files.items()},
            "files": {k: str(v) for k, v in files.items()}
            | {"boot": str(root / "receipts" / f"{s['id']}-boot.json")},
        }
    return out


def judge_bar(plan: dict, comparison: dict, root: Path) -> dict:
    from knee import bar

    receipts = root / "receipts"
    measured = {jsonio.read(receipts / f"{s['id']}-boot.json", "boot")["bar_sha256"]
                for s in plan["protocol"]["sessions"]}
    return bar.judge(comparison, plan["bar"], plan["protocol"]["pairs"], plan["bar_sha256"],
                     measured)


