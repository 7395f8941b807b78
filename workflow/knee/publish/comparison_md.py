"""The comparison and the bar as Markdown (comparison.md, and what `knee compare` prints of an
invalid comparison), and the number formats every report of them shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def fmt(x) -> str:
    """Two decimals, or four significant digits for small values (TTFT in seconds)."""
    if x is None:
        return "–"
    return f"{x:.4g}" if abs(x) < 10 else f"{x:.2f}"


def pctf(x) -> str:
    return "–" if x is None else f"{x:+.2f}%"


def ci(interval) -> str:
    return "–" if not interval else f"{interval[0]:+.1f}% … {interval[1]:+.1f}%"


def level(r: dict) -> str:
    """What an interval resampled, in a few words: over boot pairs or within one pair."""
    where = "over boot pairs" if r["interval_level"] == "boot pairs" else "within the pair"
    return f"{100 * r['confidence']:g}% {where}"


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
