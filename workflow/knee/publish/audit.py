"""Audit a results folder and trace a published number back to what produced it.

Offline by construction: recomputes from raw files through the same code paths as the
workflow (analysis, comparison, bar, README), never imports the runtime or the client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from knee.analyze import acceptance as accepted
from knee.analyze import compare, hosts
from knee.analyze.bar import judge_plan
from knee.analyze.folder import (
    load_sessions,
    load_stops,
    realized_path,
    realized_sessions,
    recommendation_of,
    session_receipts,
)
from knee.analyze.looks import decide
from knee.analyze.window.prom import window_metrics
from knee.core import folderscan, jsonio, layout, rawfiles
from knee.core.errors import KneeError
from knee.core.jsonio import sha256_file
from knee.core.records import LoadedSession, Plan, WindowMetrics
from knee.instruments import instrument_names
from knee.plan import configfile
from knee.publish import evidence, htmlpage, readme, rendered, tables
from knee.publish.evidence import diff

MANIFEST_LIMIT = 4 << 20  # a manifest lists a few hundred files
LISTED = (layout.PLAN, layout.README, layout.PAGE, layout.RECEIPTS, layout.RAW, layout.PROTOCOL,
          layout.COMPARISON_DIR, layout.FIGURES, layout.WORKFLOW, layout.CRATE)


def manifest_lines(root: Path) -> list[str]:
    """sha256sum-compatible lines for every raw and derived file of an experiment."""
    files = []
    for name in LISTED:
        p = root / name
        files += [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
    return [f"{sha256_file(f)}  {f.relative_to(root).as_posix()}" for f in files
            if not f.name.startswith(".")]


def check_manifest(root: Path) -> list[str]:
    path = root / layout.MANIFEST
    if not path.is_file():
        return [f"{path}: missing"]
    problems, listed = [], set()
    for n, line in enumerate(jsonio.read_text(path, MANIFEST_LIMIT).splitlines(), 1):
        digest, _, name = line.partition("  ")
        if name in listed:
            problems.append(f"{path}:{n}: {name!r} is listed more than once")
            continue
        listed.add(name)
        try:
            f = jsonio.in_folder(root, name)
        except KneeError as e:
            problems.append(f"{path}:{n}: {e}")
            continue
        if not f.is_file():
            problems.append(f"{path}:{n}: {name} is listed but missing")
        elif sha256_file(f) != digest:
            problems.append(f"{path}:{n}: {name} does not match its sha256 (changed after "
                            "the manifest was written)")
    for line in manifest_lines(root):
        name = line.split("  ", 1)[1]
        if name not in listed and name != layout.MANIFEST:
            problems.append(f"{path}: {name} is not listed")
    return problems


def check_crate(root: Path) -> list[str]:
    """The RO-Crate's files and their sha256 against MANIFEST.sha256 (which check_manifest
    holds against the files themselves)."""
    path, manifest = root / layout.CRATE, root / layout.MANIFEST
    if not path.is_file():
        return [f"{layout.CRATE}: missing (re-render: knee crate)"]
    if not manifest.is_file():
        return []
    try:
        files = [e for e in jsonio.read(path)["@graph"]
                 if "File" in ([e["@type"]] if isinstance(e["@type"], str) else e["@type"])]
    except (KeyError, TypeError) as e:
        return [f"{layout.CRATE}: not an RO-Crate ({type(e).__name__}: {e})"]
    described = {e.get("@id"): e.get("sha256") for e in files}
    listed = {name: digest for digest, name in (line.split("  ", 1) for line in
              jsonio.read_text(manifest).splitlines() if "  " in line)}
    listed.pop(layout.CRATE, None)
    problems = []
    for name in sorted(set(listed) | set(described)):
        if name not in described:
            problems.append(f"{layout.CRATE}: {name} is listed in {layout.MANIFEST} but not in "
                            "the crate")
        elif name not in listed:
            problems.append(f"{layout.CRATE}: describes {name}, which {layout.MANIFEST} does "
                            "not list")
        elif described[name] != listed[name]:
            problems.append(f"{layout.CRATE}: {name}: sha256 {str(described[name])[:12]} != "
                            f"{layout.MANIFEST}'s {listed[name][:12]}")
    return problems


LIMITS = (
    "What one folder cannot prove about itself: receipts and raw files forged together, "
    "consistently with each other, with plan.json and with the config copy, pass (nothing in "
    "the folder is signed); that the bar was registered before the first boot is shown by the "
    "boot receipts, written by the sessions, and by git where the folder lies in a repository "
    "(the git note).")


def check_finished(root: Path, plan: Plan) -> None:
    """A folder still being measured (over several leases of a GPU host, say) has published
    nothing yet: said as such, with how far it got, rather than as its first missing file. A
    published folder (it has a manifest) that lacks a session is audited, and the session named."""
    if (root / layout.MANIFEST).exists() or not isinstance(plan["protocol"]["pairs"], int):
        return  # stopping by precision: realized.json says how many pairs ran
    planned = [s["id"] for s in plan["protocol"]["sessions"]]
    done = [sid for sid in planned if (root / layout.receipt(sid, "stop")).is_file()]
    if len(done) < len(planned):
        where = ""
        if done and (boot := root / layout.receipt(done[-1], "boot")).is_file():
            hardware = jsonio.read(boot, "boot").get("hardware") or {}
            kind = hosts.kind_text(hosts.kind(hardware))
            where = f", on {kind}" if kind else ""
        raise KneeError(
            f"{root}: unfinished: {len(done)} of {len(planned)} sessions measured (the last: "
            f"{done[-1] if done else 'none'}{where}); it publishes nothing to audit until its "
            f"last session: `{remeasure(plan)}` measures the rest"
            + (" on a host of that kind" if where else ""))


def remeasure(plan: Plan) -> str:
    """The command that measures a folder's remaining sessions: its config, and the folder's
    name where the config names another (measured under a name of its own, KNEE_NAME)."""
    try:
        named = configfile.load(plan["config_file"]).get("name")
    except (KneeError, OSError):
        named = None
    return f"snakemake --configfile {plan['config_file']}" + (
        f" --config name={plan['name']}" if named and named != plan["name"] else "")


def audit(root: Path) -> list[str]:
    """Everything that disagrees, as lines naming the file and the field; empty if all agree."""
    return examine(root)[0]


def quiet(_: str) -> None:
    """An audit that says nothing as it goes."""


def examine(root: Path, say: Callable[[str], None] = quiet) -> tuple[list[str], list[str]]:
    """(problems, notes): what disagrees, and what the folder could not be checked for. say:
    told what is checked as the audit goes (a long folder takes a minute)."""
    root = Path(root)
    say(f"reading {root}: every file held to its size and kind")
    if unreadable := folderscan.problems(root):
        return unreadable, []
    plan = jsonio.read(root / layout.PLAN, "plan")
    check_finished(root, plan)
    loaded = load_sessions(plan, root)
    order = [(s["id"], loaded[(s["pair"], s["arm"])]) for s in realized_sessions(plan, root)]
    say(f"{len(order)} sessions: receipts against the plan, the manifest and the crate")
    problems, notes = check_sessions(root, plan, order)
    problems = check_manifest(root) + check_crate(root) + problems
    boots = [session["boot"] for _, session in order]
    problems += check_order(root, plan, boots)
    problems += check_looks(root, plan)
    windows, sources = [], []
    for n, (sid, session) in enumerate(order, 1):
        say(f"session {sid} ({n} of {len(order)}): each window's metrics recomputed from its "
            f"raw records and scrapes")
        for inst in instrument_names(plan):
            fresh, stored = check_window(root, sid, inst, session, plan)
            problems += fresh
            windows.append(stored)
            sources.append(f"results/{plan['name']}/{layout.metrics(sid, inst)}")
    say("the comparison, the bar, the tables, the figures and the README, recomputed")
    prediction = jsonio.read(root / layout.PREDICTION, "recommendation") \
        if "prediction" in plan and (root / layout.PREDICTION).is_file() else None
    comparison = compare.compare(plan, loaded, prediction)
    problems += [f"{layout.raw_dir(w['session'])}/{w['instrument']}: the raw records disagree "
                 f"with the server's own counters: {w['why']}"
                 for w in comparison.get("counter_disagreements", [])]
    stored_comparison = jsonio.read(root / layout.COMPARISON, "comparison")
    problems += [f"{layout.COMPARISON}#{p}: differs from the recomputation"
                 for p in diff({k: stored_comparison.get(k) for k in comparison}, comparison)]
    problems += tables.check(root, stored_comparison, loaded)
    bar = judge_plan(plan, comparison, boots)
    stored_bar = jsonio.read(root / layout.BAR, "bar")
    problems += [f"{layout.BAR}#{p}: differs from the recomputation"
                 for p in diff({k: stored_bar.get(k) for k in bar}, bar)]
    acceptance = accepted.document(windows, sources, plan["analysis"]["confidence"])
    problems += rendered.check(root, plan, comparison, bar, acceptance["windows"])
    problems += check_recommendation(root, plan)
    text = readme.render(plan, comparison, bar, boots, acceptance,
                         **session_receipts(plan, root), recommendation=recommendation_of(root))
    notes += evidence.git_history(root, plan)
    return problems + check_readme(root, text), list(dict.fromkeys(notes))


def check_sessions(root: Path, plan: Plan, order: list[tuple[str, LoadedSession]]) -> \
        tuple[list[str], list[str]]:
    """The plan against its config, every boot against the plan's arm and the registered bar,
    every raw file against its session and boot."""
    boots = {sid: session["boot"] for sid, session in order}
    problems, notes = evidence.registration(root, plan, boots)
    problems += evidence.booted_as_planned(plan, realized_sessions(plan, root), boots)
    stops = load_stops(plan, root)
    digest = (plan["runtime"].get("image") or {}).get("digest")
    for sid, boot in boots.items():
        if digest and boot.get("image_digest") != digest:
            problems.append(f"{layout.receipt(sid, 'boot')}: image_digest "
                            f"{boot.get('image_digest')} != plan.json runtime.image.digest "
                            f"{digest}")
        p, n = evidence.bound_to_session(root, plan, sid, boot, stops.get(sid),
                                           instrument_names(plan))
        problems += p
        notes += n
    return problems, notes


def check_window(root: Path, sid: str, inst: str, session: LoadedSession, plan: Plan) -> \
        tuple[list[str], WindowMetrics]:
    """One window's metrics recomputed from its raw file and scrapes, against the stored."""
    path = root / layout.metrics(sid, inst)
    files = rawfiles.window(root / layout.raw_dir(sid), inst)
    before, after = files["prom.before"], files["prom.after"]
    stored = jsonio.read(path, "metrics")
    try:
        fresh = window_metrics(session["raw"][inst], session["boot"], before, after,
                               plan["analysis"]["knee_threshold"])
    except KneeError as e:
        return [f"{path}: cannot be recomputed: {e}"], stored
    return [f"{path}#{p}: differs from the recomputation" for p in
            diff({k: stored.get(k) for k in fresh}, fresh)], stored


def check_readme(root: Path, text: str) -> list[str]:
    """README.md against its rendering from the recomputed files, line by line; index.html
    against the page of that rendering."""
    page = root / layout.PAGE
    problems = [f"{layout.PAGE}: missing"] if not page.is_file() else \
        [f"{layout.PAGE}: differs from the page of the recomputed README"] \
        if jsonio.read_text(page) != htmlpage.render(text) else []
    published = jsonio.read_text(root / layout.README).splitlines()
    differing = [(n, a, b) for n, (a, b) in
                 enumerate(zip(published, text.splitlines(), strict=False), 1) if a != b]
    for n, a, b in differing[:10]:
        problems.append(f"README.md:{n}: differs from the recomputation: {a!r} != {b!r}")
    if len(differing) > 10:
        problems.append(f"README.md: {len(differing) - 10} more lines differ")
    if len(published) != len(text.splitlines()):
        problems.append(f"README.md: {len(published)} lines, recomputation has "
                        f"{len(text.splitlines())}")
    return problems


def check_prediction(plan: Plan, root: Path) -> list[str]:
    """A verification run's prediction, sealed in its folder, is still the bytes it registered
    (the recommendation it was copied from, in another folder, is not read)."""
    ref = plan.get("prediction")
    if not ref:
        return []
    path = Path(root) / layout.PREDICTION  # sealed when it was planned
    if not path.is_file():
        return [f"{layout.PREDICTION}: missing: the prediction plan.json#/prediction registers "
                f"({ref['file']}, sha256 {ref['sha256'][:12]}) is not sealed in the folder, so "
                "the verification cannot be shown against it"]
    digest = sha256_file(path)
    if digest != ref["sha256"]:
        return [f"{layout.PREDICTION}: sha256 {digest[:12]}, plan.json#/prediction registered "
                f"{ref['sha256'][:12]}: the prediction changed after the run was planned"]
    return []


def check_recommendation(root: Path, plan: Plan) -> list[str]:
    """recommend/: the recommendation recomputed from the raw files, and its README,
    verify.yaml and figure rendered again, equal to what is published."""
    from knee.publish.recommend import outputs, report

    problems = check_prediction(plan, root)
    folder = outputs.folder(root)
    if not folder.is_dir():
        return problems
    fresh = outputs.make(plan, root)
    stored = jsonio.read(folder / "recommendation.json", "recommendation")
    problems += [f"{layout.RECOMMENDATION}#{p}: differs from the recomputation"
                 for p in diff({k: stored.get(k) for k in fresh}, fresh)]
    texts = {"README.md": report.readme(stored, plan),
             "verify.yaml": outputs.verify_text(stored, plan,
                                                      outputs.config_of(root))}
    for name, text in texts.items():
        if jsonio.read_text(folder / name) != text:
            problems.append(f"{layout.RECOMMEND}/{name}: differs from the recomputation")
    return problems + rendered.recommend_figure(root, stored)


def check_order(root: Path, plan: Plan, boots: Sequence[Mapping[str, Any]]) -> list[str]:
    """The sessions ran in the planned order: each boot started after the previous stop."""
    problems = []
    for s, boot in zip(realized_sessions(plan, root), boots, strict=True):
        if s["after"] is None:
            continue
        stop = jsonio.read(root / layout.receipt(s["after"], "stop"), "stop")
        if boot["started_at"] < stop["stopped_at"]:
            problems.append(f"{layout.receipt(s['id'], 'boot')}: started_at "
                            f"{boot['started_at']} is before {s['after']} stopped "
                            f"({stop['stopped_at']}): the sessions did not run in the planned "
                            "order")
    return problems


def check_looks(root: Path, plan: Plan) -> list[str]:
    """Stopping by precision: every look recomputed from the raw files it saw."""
    path = realized_path(root)
    if not path.exists():
        return []
    problems = []
    for d in jsonio.read(path, "realized")["decisions"]:
        look = root / layout.look(d["pairs"])
        stored = jsonio.read(look, "decision")
        fresh = decide(plan, root, d["pairs"])
        problems += [f"{layout.PROTOCOL}/{look.name}#{p}: differs from the recomputation"
                     for p in diff({k: stored.get(k) for k in fresh}, fresh)]
    return problems
