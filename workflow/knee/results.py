"""Reading a results folder: the sessions' receipts and raw files, and the bar's verdict."""

from __future__ import annotations

from pathlib import Path

from knee import jsonio

INSTRUMENTS = ("sweep", "fixture", "depth", "probe")  # in the order a session runs them
FIGURES = ("throughput", "ttft", "acceptance", "fixture", "depth")


def instrument_names(plan: dict) -> list[str]:
    return [name for name in INSTRUMENTS if name in plan["instruments"]]


def boot_path(root: Path, sid: str) -> Path:
    return Path(root) / "receipts" / f"{sid}-boot.json"


def load_boots(plan: dict, root: Path) -> list[dict]:
    """Every session's boot receipt, in protocol order."""
    return [jsonio.read(boot_path(root, s["id"]), "boot") for s in plan["protocol"]["sessions"]]


def load_caches(plan: dict, root: Path) -> dict[str, dict]:
    """Every session's compile-cache receipt that exists, by session id."""
    paths = {s["id"]: Path(root) / "receipts" / f"{s['id']}-cache.json"
             for s in plan["protocol"]["sessions"]}
    return {sid: jsonio.read(p, "cache") for sid, p in paths.items() if p.exists()}


def load_sessions(plan: dict, root: Path) -> dict:
    """sessions[(pair, arm)] = {"boot", "raw": {instrument: raw}, "files": {kind: path}}."""
    out = {}
    for s in plan["protocol"]["sessions"]:
        files = {n: Path(root) / "raw" / s["id"] / f"{n}.json" for n in instrument_names(plan)}
        files["boot"] = boot_path(root, s["id"])
        out[(s["pair"], s["arm"])] = {
            "boot": jsonio.read(files["boot"], "boot"),
            "raw": {n: jsonio.read(p, "raw") for n, p in files.items() if n != "boot"},
            "files": {k: str(v) for k, v in files.items()},
        }
    return out


def judge_bar(plan: dict, comparison: dict, boots: list[dict]) -> dict:
    """The bar's verdict; the bar hashes recorded at boot tell whether it changed since."""
    from knee import bar

    return bar.judge(comparison, plan["bar"], plan["protocol"]["pairs"], plan["bar_sha256"],
                     {b["bar_sha256"] for b in boots})


def window_metrics(raw: dict, boot: dict, before: Path, after: Path,
                   knee_threshold: float) -> dict:
    """One instrument window's metrics from its raw file and scrapes (workflow and audit)."""
    from knee import prom

    return prom.instrument_metrics(
        raw, Path(before).read_text(), Path(after).read_text(),
        speculation=bool(boot["server"].get("speculative_config")),
        knee_threshold=knee_threshold, files=f"{before}, {after}")
