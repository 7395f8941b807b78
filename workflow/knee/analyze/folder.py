"""Reading a results folder: the sessions' receipts and raw files, and the bar's verdict."""

from __future__ import annotations

from pathlib import Path

from knee import instruments
from knee.core import jsonio, rawfiles
from knee.plan import stopping


def instrument_names(plan: dict) -> list[str]:
    """The plan's instruments, in the order a session runs them."""
    return [name for name in instruments.names() if name in plan["instruments"]]


def boot_path(root: Path, sid: str) -> Path:
    return Path(root) / "receipts" / f"{sid}-boot.json"


def load_boots(plan: dict, root: Path) -> list[dict]:
    """Every session's boot receipt, in protocol order."""
    return [jsonio.read(boot_path(root, s["id"]), "boot") for s in realized_sessions(plan, root)]


def load_receipts(plan: dict, root: Path, kind: str) -> dict[str, dict]:
    """Every session's receipt of this kind that exists, by session id."""
    paths = {s["id"]: Path(root) / "receipts" / f"{s['id']}-{kind}.json"
             for s in realized_sessions(plan, root)}
    return {sid: jsonio.read(p, kind) for sid, p in paths.items() if p.exists()}


def session_receipts(plan: dict, root: Path) -> dict[str, dict]:
    """What the README shows of each session beside its boot: compile cache and stop."""
    return {"caches": load_receipts(plan, root, "cache"),
            "stops": load_receipts(plan, root, "stop")}


def realized_path(root: Path) -> Path:
    return Path(root) / "protocol" / "realized.json"


def realized_pairs(plan: dict, root: Path) -> int:
    """How many pairs ran: the plan's number, or (stopping by precision) the realized receipt."""
    lo, hi = stopping.bounds(plan["protocol"]["pairs"])
    if lo == hi:
        return hi
    return jsonio.read(realized_path(root), "realized")["pairs"]


def sessions_upto(plan: dict, n: int) -> list[dict]:
    """The planned sessions of the first n pairs, in protocol order."""
    return [s for s in plan["protocol"]["sessions"] if s["pair"] <= n]


def realized_sessions(plan: dict, root: Path) -> list[dict]:
    """The planned sessions that belong to pairs that ran, in protocol order."""
    return sessions_upto(plan, realized_pairs(plan, root))


def load_sessions(plan: dict, root: Path, pairs: int | None = None) -> dict:
    """sessions[(pair, arm)] = {"boot", "raw": {instrument: raw}, "files": {kind: path}}, for
    the pairs that ran (or the first `pairs`)."""
    out = {}
    upto = realized_pairs(plan, root) if pairs is None else pairs
    for session in sessions_upto(plan, upto):
        sid = session["id"]
        files = {name: rawfiles.stored(Path(root) / "raw" / sid, f"{name}.json")
                 for name in instrument_names(plan)}
        files["boot"] = boot_path(root, sid)
        out[(session["pair"], session["arm"])] = {
            "boot": jsonio.read(files["boot"], "boot"),
            "raw": {name: jsonio.read(path, "raw") for name, path in files.items()
                    if name != "boot"},
            "files": {kind: str(path) for kind, path in files.items()},
        }
    return out


def prediction_path(plan: dict, root: Path) -> Path:
    """A verification run's registered prediction: the copy the results folder carries
    (workflow/recommendation.json, written with the crate), else the file the plan names (the
    path from the checkout's top, as the workflow reads it before the crate exists)."""
    copy = Path(root) / "workflow" / "recommendation.json"
    return copy if copy.is_file() else Path(plan["prediction"]["file"])


def recommendation_of(root: Path) -> dict | None:
    """recommend/recommendation.json, if the folder has one."""
    path = Path(root) / "recommend" / "recommendation.json"
    return jsonio.read(path, "recommendation") if path.is_file() else None


def judge_bar(plan: dict, comparison: dict, boots: list[dict]) -> dict:
    """The bar's verdict over the pairs that ran, each rule at the bar's alpha spent over the
    protocol's looks; the bar hashes recorded at boot tell whether it changed since."""
    from knee.analyze import bar

    pairs = len({b["pair"] for b in boots})
    return bar.judge(comparison, plan["bar"], pairs, plan["bar_sha256"],
                     {b["bar_sha256"] for b in boots}, looks=stopping.looks(
                         plan["protocol"]["pairs"]))


def window_metrics(raw: dict, boot: dict, before: Path, after: Path,
                   knee_threshold: float) -> dict:
    """One instrument window's metrics from its raw file and scrapes (workflow and audit)."""
    from knee.analyze import prom

    return prom.instrument_metrics(
        raw, jsonio.read_text(before), jsonio.read_text(after),
        speculation=bool(boot["server"].get("speculative_config")),
        knee_threshold=knee_threshold, files=f"{before}, {after}")


def decide(plan: dict, root: Path, n: int) -> dict:
    """One look of a run that stops by precision: the comparison and bar of pairs 1..n."""
    from knee.analyze import compare

    sessions = load_sessions(plan, root, pairs=n)
    comparison = compare.compare(plan, sessions)
    bar = judge_bar(plan, comparison, [s["boot"] for s in sessions.values()])
    return {"experiment": plan["name"], **stopping.decision(bar, n, plan["protocol"]["pairs"])}


def realized(plan: dict, decisions: list[dict]) -> dict:
    """The realized protocol from the looks made: where the first look said stop, or max."""
    lo, hi = stopping.bounds(plan["protocol"]["pairs"])
    looks = sorted(decisions, key=lambda d: d["pairs"])
    pairs = next((d["pairs"] for d in looks if d["stop"]), hi)
    keep = ("pairs", "stop", "reason", "verdict", "rules")
    return {"experiment": plan["name"], "pairs": pairs, "rule": stopping.RULE,
            "sessions": [s["id"] for s in sessions_upto(plan, pairs)],
            "decisions": [{k: d[k] for k in keep} for d in looks if d["pairs"] <= pairs]}
