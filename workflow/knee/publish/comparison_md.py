"""The comparison and the bar as Markdown (comparison.md, and what `knee compare` prints of an
invalid comparison), in the number formats of knee.publish.numbers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knee.publish.numbers import ci, fmt, level, pctf


def comparison_markdown(comparison: Mapping[str, Any], bar: dict | None = None) -> str:
    lines = [f"# Comparison: {comparison['experiment']}", "",
             f"Validation: **{comparison['verdict']}** — {len(comparison['fields_checked'])} "
             f"fields checked, {len(comparison['mismatches'])} differ.", ""]
    if bar is not None:
        changed = " (**bar changed after measurement**)" if bar["bar_changed"] else ""
        lines += [f"Bar: **{bar['verdict']}**{changed}", ""]
        lines += [f"- {r['rule']}: {r['verdict']} — " + (
            f"estimate {pctf(r.get('estimate'))}, interval {ci(r.get('interval'))} "
            f"({r['test']}), per pair "
            + ", ".join(pctf(p["delta_pct"]) for p in r.get("per_pair", []))
            if r["verdict"] != "INVALID" else r.get("reason", "")) for r in bar["rules"]]
        lines.append("")
    if comparison["mismatches"]:
        lines += ["| where | field | control | candidate | files |", "|---|---|---|---|---|"]
        lines += [f"| {m['where']} | {m['field']} | `{m['control']}` | `{m['candidate']}` | "
                  f"{' / '.join(str(f) for f in m.get('files') or [])} |"
                  for m in comparison["mismatches"]]
        lines += ["", "No delta is rendered for an invalid comparison."]
        return "\n".join(lines) + "\n"
    lines += ["| instrument | point | metric | pair | control | candidate | delta | interval | "
              "noise |", "|---|---|---|---|---:|---:|---:|---|---|"]
    lines += [f"| {r['instrument']} | {r['point']} | {r['metric']} | {r['pair']} | "
              f"{fmt(r['control'])} | {fmt(r['candidate'])} | {pctf(r['delta_pct'])} | "
              f"{ci(r['interval'])} ({level(r)}) | {r['noise']} |" for r in comparison["rows"]]
    lines += ["", comparison["interval_method"], "", comparison.get("noise_method", "")]
    return "\n".join(lines) + "\n"
