"""What a results folder can prove about where its numbers came from, recomputed from content
(no stored hash is trusted): the plan re-made from the folder's copy of the config, the bar's
registration before every boot, each boot as the plan's arm, each raw file bound to its session
and its boot. Each check returns (problems, notes); a note says what a folder cannot prove.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from knee.core import jsonio, layout, rawfiles
from knee.core.errors import KneeError
from knee.core.records import BootReceipt, Plan, PlannedSession, StopReceipt
from knee.plan import arms, config, configfile, runtimes, secrets

# process_start_time_seconds has 0.1 s resolution and started_at whole seconds
START_SLACK_S = 2.0
START = re.compile(r"^process_start_time_seconds\s+(\S+)\s*$", re.M)
Checked = tuple[list[str], list[str]]


def diff(a: Any, b: Any, pointer: str = "") -> list[str]:
    """JSON pointers where two documents differ (floats compared to 1e-9 relative)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b), key=str)
                for p in (diff(a[k], b[k], f"{pointer}/{k}") if k in a and k in b
                          else [f"{pointer}/{k}"])]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [pointer or "/"]
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True))
                for p in diff(x, y, f"{pointer}/{i}")]
    if isinstance(a, float) or isinstance(b, float):
        try:
            return [] if abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)) else [pointer]
        except TypeError:
            return [pointer]
    return [] if a == b else [pointer or "/"]


def remade_plan(root: Path, plan: Plan) -> Plan | None:
    """plan.json as knee makes it from the folder's copy of the config (workflow/config.yaml),
    under the plan's name; None where the folder has no copy."""
    copy_ = Path(root) / layout.CONFIG_COPY
    if not copy_.is_file():
        return None
    cfg = configfile.load(copy_)
    cfg["name"] = plan["name"]  # --config name=NAME is not in the file
    prediction = None
    if "prediction" in cfg:
        kept = Path(root) / layout.PREDICTION
        prediction = {"file": cfg["prediction"],
                      "sha256": jsonio.sha256_file(kept) if kept.is_file() else None}
    # the calibration an adjusted bar registers is embedded in the plan, under the bar's
    # sha256 that every boot receipt records (the registration check compares them)
    return config.plan_of(config.validate(cfg, str(copy_)), plan["config_file"], prediction,
                          plan.get("calibration") if cfg["bar"].get("adjust") else None)


def registration(root: Path, plan: Plan, boots: Mapping[str, BootReceipt]) -> Checked:
    """The plan against the config it came from, and both hashes against every boot receipt:
    a bar that was not the registered one when a session booted is a problem."""
    problems, notes = [], []
    bar = config.registered_bar_sha256(plan)
    if bar != plan["bar_sha256"]:
        problems.append(f"plan.json#/bar_sha256: {plan['bar_sha256'][:12]} is not the sha256 of "
                        f"plan.json's bar and session order ({bar[:12]}): the bar was edited")
    try:
        fresh = remade_plan(root, plan)
    except KneeError as e:
        fresh = None
        problems.append(f"workflow/config.yaml: cannot be planned again: {e}")
    if fresh is None:
        notes.append("not possible: plan.json re-made from the config (the folder keeps no "
                     "plannable copy of it under workflow/)")
        config_sha = plan["config_sha256"]
    else:
        config_sha = fresh["config_sha256"]
        keep = [k for k in fresh if k != "workflow"]
        problems += [f"plan.json#{p}: differs from the plan re-made from workflow/config.yaml"
                     for p in diff({k: plan.get(k) for k in keep}, fresh)]
    for sid, boot in boots.items():
        if boot.get("config_sha256") != config_sha:
            problems.append(f"{layout.receipt(sid, 'boot')}: config_sha256 "
                            f"{str(boot.get('config_sha256'))[:12]} != {config_sha[:12]}, "
                            "recomputed from the folder's config: the session booted under "
                            "another config")
        if boot.get("bar_sha256") != bar:
            problems.append(f"{layout.receipt(sid, 'boot')}: bar_sha256 "
                            f"{str(boot.get('bar_sha256'))[:12]} != {bar[:12]}, recomputed "
                            "from plan.json's bar: this bar was not registered before the "
                            "session booted")
    return problems, notes


def argv_settings(argv: list[str]) -> dict[str, str | bool]:
    """An engine argv's flags: --flag value pairs, and bare flags as True."""
    flags: dict[str, str | bool] = {}
    i = 0
    while i < len(argv):
        if argv[i].startswith("--"):
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is None or nxt.startswith("--"):
                flags[argv[i][2:]] = True
                i += 1
            else:
                flags[argv[i][2:]] = nxt
                i += 2
        else:
            i += 1
    return flags


def booted_as_planned(plan: Plan, sessions: list[PlannedSession],
                      boots: Mapping[str, BootReceipt]) -> list[str]:
    """Each boot receipt names its own session, pair and arm, and records the plan's server
    settings for that arm, in its resolved settings and in the argv it booted."""
    problems = []
    for s in sessions:
        sid, boot = s["id"], boots[s["id"]]
        where = layout.receipt(sid, "boot")
        for key, planned in (("session", sid), ("pair", s["pair"]), ("arm", s["arm"])):
            if boot.get(key) != planned:
                problems.append(f"{where}: {key} {boot.get(key)!r} != {planned!r}, the plan's "
                                "for this session")
        arm = plan["arms"][s["arm"]]
        if not runtimes.of(plan).boots:
            continue  # knee booted nothing: the server's settings are the operator's
        # both as a receipt records them: secrets and credential-like values redacted
        problems += [f"{where}#/server{p}: differs from plan.json#/arms/{s['arm']}{p}"
                     for p in diff(boot.get("server"), secrets.redact_arm(arm))]
        shown = argv_settings(boot.get("argv", []))
        want = argv_settings(secrets.redact_argv(arms.server_argv("python", arm, "m", "m", "h",
                                                                  0)))
        for flag, value in want.items():
            if flag in ("model", "served-model-name", "host", "port"):
                continue
            if shown.get(flag) != value and not (flag == "speculative-config" and
                                                  same_json(shown.get(flag), value)):
                problems.append(f"{where}#/argv: --{flag} {shown.get(flag)!r}, the plan's "
                                f"{s['arm']} arm has {value!r}")
    return problems


def same_json(a: object, b: object) -> bool:
    try:
        return isinstance(a, str) and isinstance(b, str) and \
            bool(json.loads(a) == json.loads(b))
    except (TypeError, ValueError):
        return False


def started(text: str) -> float | None:
    m = START.search(text)
    return float(m[1]) if m else None


def bound_to_session(root: Path, plan: Plan, sid: str, boot: BootReceipt, stop: StopReceipt | None,
                     instruments: list[str]) -> Checked:
    """A session's raw files are its own: each names the session and the instrument, the
    scrapes come from the process this boot started, and (sessions that recorded them) the
    files hash to what the stop receipt recorded when the session published."""
    problems, notes = [], []
    raw_dir = Path(root) / layout.raw_dir(sid)
    t0 = datetime.fromisoformat(boot["started_at"]).timestamp()
    t1 = t0 + float(boot.get("boot_seconds") or 0)
    for inst in instruments:
        files = rawfiles.window(raw_dir, inst)
        raw = jsonio.read(files["json"], "raw")
        for key, want in (("session", sid), ("instrument", inst)):
            if raw.get(key) != want:
                problems.append(f"{layout.raw_dir(sid)}/{files['json'].name}: {key} "
                                f"{raw.get(key)!r} != "
                                f"{want!r}: not this session's measurement")
        if not runtimes.of(plan).boots:
            continue
        for when in ("before", "after"):
            path = files[f"prom.{when}"]
            at = started(jsonio.read_bytes(path).decode(errors="replace"))
            if at is None:
                notes.append("not possible: a scrape bound to its boot by the engine's "
                             "process start time (some scrapes have no "
                             "process_start_time_seconds)")
            elif not t0 - START_SLACK_S <= at <= t1 + START_SLACK_S:
                problems.append(f"{layout.raw_dir(sid)}/{path.name}: the engine process started at "
                                f"{at:.1f}, not during this session's boot ({t0:.0f} to "
                                f"{t1:.0f}, receipts/{sid}-boot.json): another boot's scrape")
    recorded = stop.get("raw_sha256") if stop else None
    if recorded is None:
        notes.append("not possible: raw files held to the sha256 their session recorded when "
                     "it published (stop receipts of an older knee record none)")
        return problems, notes
    present = {p.name for p in raw_dir.iterdir() if p.is_file() and ".metrics." not in p.name}
    receipt = layout.receipt(sid, "stop")
    for name in sorted(set(recorded) | present):
        where = f"{layout.raw_dir(sid)}/{name}"
        if name not in present:
            problems.append(f"{where}: missing, recorded by {receipt}")
        elif name not in recorded:
            problems.append(f"{where}: not recorded by {receipt}")
        elif jsonio.sha256_file(raw_dir / name) != recorded[name]:
            problems.append(f"{where}: sha256 differs from the one {receipt} recorded when the "
                            "session published")
    return problems, notes


def git_history(root: Path, plan: Plan) -> list[str]:
    """Where the folder lies in a git repository: whether plan.json was committed, unchanged,
    before any raw file was (the registration as git shows it)."""
    def git(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(root), *argv], capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=60, check=False)

    if git("rev-parse", "--is-inside-work-tree").returncode != 0:
        return ["git: the folder is not in a git repository; its history cannot be read"]
    # the latest time each was added: a folder measured anew replaces the earlier files
    plans = git("log", "--diff-filter=A", "--format=%H", "--", "plan.json").stdout.split()
    receipts = git("log", "--diff-filter=A", "--format=%H", "--", "receipts").stdout.split()
    if not plans or not receipts:
        return ["git: plan.json or the receipts are not committed"]
    first_plan, first_raw = plans[0], receipts[0]
    if first_plan == first_raw:
        order = "in the same commit as"
    elif git("merge-base", "--is-ancestor", first_plan, first_raw).returncode == 0:
        order = "before"
    else:
        order = "after"
    first = git("show", f"{first_plan}:./plan.json")
    try:
        first_bar = json.loads(first.stdout).get("bar_sha256") if first.returncode == 0 else None
    except ValueError:
        first_bar = None
    now = plan.get("bar_sha256")
    kept = "its bar_sha256 is still the one first committed" if first_bar == now else \
        f"its bar_sha256 was {str(first_bar)[:12]} when first committed, {str(now)[:12]} now"
    line = (f"git: plan.json was committed {order} the receipts ({first_plan[:12]}, "
            f"{first_raw[:12]}); {kept}")
    if order != "before":
        line += "; git does not show the bar registered before the measurement"
    return [line]
