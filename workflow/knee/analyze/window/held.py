"""Whether each window measured its load: the share of its time, first send to last done, at its
concurrency (recorded by the client with every closed loop; the ramp and the drain run a smaller
batch), and where a run was held for min_window_s, whether it lasted that long. A window held
under HELD of its time measured the ramp and the drain as much as the load."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from knee.analyze.folder import Sessions
from knee.core.records.window import NotHeld

HELD = 0.9


class HeldSection(TypedDict, total=False):
    """comparison.json's windows_not_held (no key where every window held)."""

    windows_not_held: list[NotHeld]


def section(sessions: Sessions) -> HeldSection:
    """comparison.json's windows_not_held: every run under HELD of its time at its concurrency,
    or held for min_window_s and shorter (its prompt list ran out). Folders measured before the
    client recorded the share have none."""
    out: list[NotHeld] = []
    for (pair, arm), s in sorted(sessions.items()):
        for inst, raw in sorted(s["raw"].items()):
            for p in raw["points"]:
                share, hold = p.get("concurrency_held_share"), p.get("hold") or {}
                short = bool(hold) and not hold["reached"]
                if (share is not None and share < HELD) or short:
                    out.append({"session": f"{pair}-{arm}", "instrument": inst,
                                "point": p["point"], "run": p["run"], "share": share,
                                "wall_s": p["wall_s"],
                                "min_window_s": hold.get("min_s") if short else None})
    return {"windows_not_held": out} if out else {}


def caveats(rows: Sequence[NotHeld]) -> list[str]:
    """One line per instrument and point: how many of its runs held their concurrency under
    HELD of their time (the lowest named), and each run held for min_window_s that ended
    sooner."""
    link = "([comparison.json](comparison/comparison.json#/windows_not_held))"
    out = []
    by_point: dict[tuple[str, str], list[tuple[float, NotHeld]]] = {}
    for r in rows:
        if (share := r["share"]) is not None and share < HELD:
            by_point.setdefault((r["instrument"], str(r["point"])), []).append((share, r))
    for (inst, point), rs in sorted(by_point.items()):
        lowest, low = min(rs, key=lambda x: x[0])
        out.append(f"{inst} point {point}: {len(rs)} run(s) held their concurrency for under "
                   f"{100 * HELD:.0f} % of their time (lowest {100 * lowest:.0f} %, "
                   f"{low['session']} run {low['run']}): they measured the ramp and the drain "
                   f"as much as the load {link}.")
    out += [f"{r['instrument']} point {r['point']}, {r['session']} run {r['run']}: its prompt "
            f"list ran out after {r['wall_s']:.1f} s, before min_window_s {r['min_window_s']:g} s "
            f"(raise max_requests_per_stream) {link}."
            for r in rows if r["min_window_s"] is not None]
    return out
