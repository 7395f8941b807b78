"""`knee trace`: the chain behind a README number (or a FILE#POINTER) of a results folder,
from the derived file to the raw records, the boot and the config. Every file it opens is named
inside the folder, from fields the plan knows (knee.publish.audit checks the folder first)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from knee.analyze.folder import realized_pairs, realized_sessions
from knee.core import folderscan, jsonio, layout, rawfiles
from knee.core.errors import KneeError
from knee.core.records import Plan, Section
from knee.instruments import instrument_names

LINK = re.compile(r"\[([^\]]*)\]\(([^)#]+)#([^)]*)\)")


def trace(root: Path, query: str) -> list[str]:
    """The chain behind a README number (or a file#pointer): derived -> raw -> boot -> config."""
    root = Path(root)
    if unreadable := folderscan.problems(root):
        raise KneeError("the folder cannot be traced:\n  " + "\n  ".join(unreadable))
    plan = jsonio.read(root / layout.PLAN, "plan")
    hits = []
    if "#" in query:
        hits.append(("(given)", *query.split("#", 1)))
    else:
        for n, line in enumerate(jsonio.read_text(root / layout.README).splitlines(), 1):
            for text, target, pointer in LINK.findall(line):
                if query in text:
                    hits.append((f"README.md:{n}", target, pointer))
    if not hits:
        raise KneeError(f"{root}/README.md: no linked number matches {query!r}")
    out = []
    for where, target, pointer in hits:
        doc = jsonio.read(jsonio.in_folder(root, target))
        try:
            value = resolve(doc, pointer)
            row = traced_row(root, plan, target, doc, pointer)
        except (KeyError, IndexError, ValueError, TypeError):
            raise KneeError(f"{where}: {target}#{pointer}: no such value in {target}") from None
        out.append(f"{where} -> {target}#{pointer} = {value!r}")
        out += [f"  {line}" for line in provenance(root, plan, target, doc, row)]
    return out


def resolve(doc: Any, pointer: str) -> Any:
    for part in [p for p in pointer.split("/") if p]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def traced_row(root: Path, plan: Plan, target: str, doc: Section, pointer: str) -> Section | None:
    """The comparison row or bar rule a pointer lies in, its pair, instrument and point held
    to the plan's (the raw files are named from them): a field of the folder's own content
    that the plan does not know is refused before any file is named from it."""
    parts = [p for p in pointer.split("/") if p]
    if target.endswith("comparison.json") and parts[:1] == ["rows"] and len(parts) > 1:
        row = dict(doc["rows"][int(parts[1])])
    elif target.endswith("bar.json") and parts[:1] == ["rules"] and len(parts) > 1:
        rule = doc["rules"][int(parts[1])]
        pair = rule["per_pair"][int(parts[3])]["pair"] \
            if parts[2:3] == ["per_pair"] and len(parts) > 3 else "all"
        row = {**rule, "pair": pair}
    else:
        return None
    pairs = realized_pairs(plan, root)
    if row["pair"] != "all" and (type(row["pair"]) is not int or not 1 <= row["pair"] <= pairs):
        raise KneeError(f"{target}#{pointer}: pair {repr(row['pair'])[:40]} is not a pair "
                        f"this folder measured (1 to {pairs}): no raw file is named from it")
    if row["instrument"] not in instrument_names(plan):
        raise KneeError(f"{target}#{pointer}: instrument {repr(row['instrument'])[:40]} is "
                        f"not one the plan runs ({', '.join(instrument_names(plan))})")
    return row


def provenance(root: Path, plan: Plan, target: str, doc: Section, row: Section | None) -> list[str]:
    lines = []
    if row is not None:
        pairs = [row["pair"]] if row["pair"] != "all" else range(
            1, realized_pairs(plan, root) + 1)
        for pair in pairs:
            for arm in ("control", "candidate"):
                sid = f"{pair}-{arm}"
                path = rawfiles.stored(root / layout.raw_dir(sid), f"{row['instrument']}.json")
                raw = jsonio.read(path, "raw")
                pts = [p for p in raw["points"] if str(row["point"]) in ("all", str(p["point"]))]
                n = sum(len(p["records"]) for p in pts)
                fps = sorted({p["profile"]["prompt_sha256"][:16] for p in pts})
                lines.append(f"{rawfiles.shown(root, path)}: {len(pts)} point run(s), "
                             f"{n} request records, prompt sha256 {', '.join(fps)}")
                lines += boot_lines(root, sid)
    elif "/raw/" in f"/{target}":
        sid = Path(target).parent.name
        if sid not in {s["id"] for s in realized_sessions(plan, root)}:
            raise KneeError(f"{target}: {sid[:40]!r} is not a session this folder measured")
        lines.append(f"scrapes: {', '.join(doc.get('scrapes', []))}")
        lines += boot_lines(root, sid)
    wf = plan.get("workflow", {})
    lines.append(f"plan.json: config {plan['config_file']} sha256 {plan['config_sha256']}, "
                 f"bar sha256 {plan['bar_sha256'][:16]}, workflow commit "
                 f"{wf.get('commit', 'unknown')}{' (dirty)' if wf.get('dirty') else ''}")
    return lines


def boot_lines(root: Path, sid: str) -> list[str]:
    boot = jsonio.read(root / layout.receipt(sid, "boot"), "boot")
    pkgs = ", ".join(f"{k} {v}" for k, v in boot["engine"]["packages"].items() if v)
    return [f"{layout.receipt(sid, 'boot')}: {boot['runtime']} runtime, image digest "
            f"{boot.get('image_digest') or 'n/a'}, model sha256 "
            f"{(boot['model'].get('sha256') or 'n/a')[:16]}, {pkgs}",
            f"  argv: {' '.join(boot['argv'])}"]
