"""The campaign README: one page over the experiments of one invocation (pure: reads each
experiment's plan, comparison, bar and recommendation; writes one Markdown file).

For every sweep concurrency it says which arm's k won each experiment, decided on the
across-pairs interval (the boot pair is the unit): the candidate when the interval lies above
zero, the control when below, "cannot tell" when it spans zero.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knee import instruments
from knee.analyze.kmodel import session_k
from knee.core import jsonio, layout
from knee.core.records import Plan
from knee.publish.numbers import ci, pctf


def arm_label(plan: Plan, arm: str, c: int | None = None) -> str:
    """off, k=N, or the schedule's k at c."""
    spec = plan["arms"][arm].get("speculative_config") or {}
    if not spec:
        return "off"
    if spec.get("num_speculative_tokens_per_batch_size") and c is None:
        return f"schedule {spec['num_speculative_tokens_per_batch_size']}"
    k = session_k(plan, arm, [c or 1])[0]
    return "off" if k == 0 else f"k={k}"


def winner(plan: Plan, row: dict | None, c: int | None) -> str:
    if row is None or row.get("interval") is None:
        return "not measured"
    lo, hi = row["interval"]
    effect = f"{pctf(row['delta_pct'])} [{ci(row['interval'])}]"
    if lo > 0:
        return f"**{arm_label(plan, 'candidate', c)}** {effect}"
    if hi < 0:
        return f"**{arm_label(plan, 'control', c)}** {effect}"
    return f"cannot tell {effect}"


def across(comparison: Mapping[str, Any], instrument: str, metric: str, point) -> dict | None:
    return next((r for r in comparison["rows"] if r["instrument"] == instrument
                 and r["metric"] == metric and r["point"] == point and r["pair"] == "all"),
                None)


def load(root: Path) -> dict:
    rec = root / layout.RECOMMENDATION
    return {"root": root, "plan": jsonio.read(root / layout.PLAN, "plan"),
            "comparison": jsonio.read(root / layout.COMPARISON, "comparison"),
            "bar": jsonio.read(root / layout.BAR, "bar"),
            "recommend": jsonio.read(rec, "recommendation") if rec.is_file() else None}


def experiment_lines(exps: list[dict], here: Path) -> list[str]:
    out = ["| experiment | control | candidate | pairs | bar | recommended |",
           "|---|---|---|---:|---|---|"]
    for e in exps:
        plan, rec = e["plan"], e["recommend"]
        link = os.path.relpath(e["root"], here)
        said = ("–" if rec is None else
                f"[{rec['schedule']}]({link}/recommend/README.md)"
                if rec["status"] == "recommended" else
                f"[refused]({link}/recommend/README.md): {rec['reason']}")
        out.append(f"| [{plan['name']}]({link}/README.md) | {arm_label(plan, 'control')} | "
                   f"{arm_label(plan, 'candidate')} | {e['bar']['pairs']} | "
                   f"{e['bar']['verdict']} | {said} |")
    return out


def winner_lines(exps: list[dict]) -> list[str]:
    load, single = instruments.role(instruments.LOAD), instruments.role(instruments.SINGLE_STREAM)
    points = sorted({c for e in exps if load in e["plan"]["instruments"]
                     for c in e["plan"]["instruments"][load]["concurrency"]})
    head = "| | " + " | ".join(e["plan"]["name"] for e in exps) + " |"
    out = [head, "|---|" + "---|" * len(exps)]
    cells = [winner(e["plan"], across(e["comparison"], single, "decode_rate_p50", "all"), 1)
             for e in exps]
    out.append(f"| single-stream decode ({single}) | " + " | ".join(cells) + " |")
    for c in points:
        cells = [winner(e["plan"], across(e["comparison"], load, "throughput", c), c)
                 for e in exps]
        out.append(f"| throughput at c={c} | " + " | ".join(cells) + " |")
    return out


def summary_lines(exps: list[dict]) -> list[str]:
    """Per experiment: where each arm's k won and where the run cannot tell."""
    out, load = [], instruments.role(instruments.LOAD)
    for e in exps:
        plan = e["plan"]
        conc = plan["instruments"].get(load, {}).get("concurrency", [])
        won: dict[str, list[str]] = {}
        for c in conc:
            row = across(e["comparison"], load, "throughput", c)
            if row is None or row.get("interval") is None:
                continue
            lo, hi = row["interval"]
            who = (arm_label(plan, "candidate", c) + " won" if lo > 0 else
                   arm_label(plan, "control", c) + " won" if hi < 0 else "cannot tell")
            won.setdefault(who, []).append(f"c={c}")
        said = "; ".join(f"{who} at {', '.join(cs)}" for who, cs in won.items())
        out.append(f"- {plan['name']} ({arm_label(plan, 'control')} against "
                   f"{arm_label(plan, 'candidate')}), throughput: {said or f'no {load}'}.")
    return out


def render(roots: list[Path], out: Path) -> str:
    exps = [load(Path(r)) for r in roots]
    here = Path(out).parent
    names = ", ".join(e["plan"]["name"] for e in exps)
    return "\n".join([
        f"# Campaign: {names}", "",
        "Which k wins at which concurrency, one experiment per column. A cell names the arm "
        "whose k won, with the candidate's change against the control and its 95% interval "
        "over boot pairs; \"cannot tell\" when that interval spans zero. Each experiment "
        "changed one variable; cells of different experiments were measured in different "
        "boots and compare only through their own controls.", "",
        *winner_lines(exps), "", "## The experiments", "", *experiment_lines(exps, here), "",
        "## In words", "", *summary_lines(exps), "",
        "Throughput is output tokens per second of wall time; the single-stream figure is the "
        "fixture's decode rate p50.", ""])


def write(roots: list[Path], out: Path) -> None:
    jsonio.atomic_write_text(Path(out), render(roots, out))
