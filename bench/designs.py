"""Benchmark: the noise of each protocol design, from published A/A folders.

    python bench/designs.py results/AA_SEQUENTIAL results/AA_SIMULTANEOUS ...

For every folder (an A/A: both arms the same) and every bar rule, prints the design (its
protocol order), the pairs, the between-pair CV (the standard deviation over pairs of each
pair's effect, in %: the noise a pair's difference carries, all of it noise in an A/A) and the
rule's MDE at that many pairs, from the folder's own comparison/bar.json. Beside it, one
boot's CV (the spread of each boot's figure around its arm's mean over the pairs) and √2 times
it: the spread the pairs' effects would have if the two arms of a pair shared none of each
other's noise, as in a sequential order whose boots are minutes apart. A design that measures
both arms in the same minutes (simultaneous, interleaved) helps where its CV lies under that.
Where the arms swap sets between pairs (those orders; in interleaved order set 2's engine boots
once set 1's has), the last column is the set effect: the set-2 arm's figure against the set-1
arm's, with its 90 % half-width (in an A/B, fitted beside the effect itself). It cancels from
the mean over an even number of pairs and widens their spread where it is not zero. An A/B
folder reads the same way: its between-pair CV is the noise its verdict rests on.
Sequential and both-arms-at-once orders measured on one host compare here.

Below the table, where both arms sent the same single-stream requests (the fixture) for the
same work (the same tokens; in folders whose records hold no tokens, every request cut at the
same max_tokens): each request's log ratio (candidate / control decode rate) and the
between-pair SD of their means per pair, beside the SD that the requests' own spread predicts
(their pooled within-pair SD / √n). Where the two agree the pairs carry no boot component and
only more requests a pair narrow them: the requests an arm needs a pair for a between-pair CV
of --target-cv. Where the measured SD lies far above the prediction, a per-boot offset (the
boot part, √(measured² − predicted²)) dominates, and no number of requests removes it.

Then each sweep point split the same way, run by run: each run's log ratio (candidate /
control throughput of the same point and run), the spread their pooled within-pair SD predicts
for the pairs' means, the measured spread, the boot part beyond it (which more or longer runs
do not remove) and the runs a point needs a pair for --target-sweep-cv.

Then each sweep point's windows (every run of every arm measured): how long they lasted and
the share of its time each held its concurrency (the ramp and the drain run a smaller batch;
under 90 % the comparison lists the window), with how many fell under 90 %.

Then each folder's measurement time: each measured pair from its first boot to its last stop
(the receipts' started_at and stopped_at; the engines' compile, boot and stop included, the
render and the transfers not), summed over pairs, in minutes of the host's GPU(s): the time a
verdict of that many pairs costs.

Last, each later folder set against the first, rule by rule: the ratio of the first's
between-pair variance to the later's, and the one-sided F test's p that the later design
spreads as wide as the first (pairs less one degrees of freedom each): with 4 pairs a folder,
only a ratio above about 9.3 is told from chance at 5 %. Reads the folders only; boots nothing.
"""

import argparse
import functools
import math
import statistics
import sys
from datetime import datetime
from pathlib import Path

from scipy import stats

from knee import instruments
from knee.analyze import armfigures, requestsplit, robust
from knee.analyze.folder import load_sessions
from knee.analyze.stats import point_summary
from knee.analyze.window.held import HELD
from knee.core import jsonio, layout
from knee.plan import together
from knee.plan.arms import NO_VARIABLE

ROOT = Path(__file__).resolve().parents[1]


def between_pair_cv(rule: dict) -> float | None:
    """The sample standard deviation of the pairs' effects (%), None under two pairs."""
    deltas = [p["delta_pct"] for p in rule.get("per_pair", []) if p.get("delta_pct") is not None]
    return statistics.stdev(deltas) if len(deltas) > 1 else None


def boot_cv(rule: dict) -> float | None:
    """The pooled SD (%, of the log) of each boot's figure around its arm's mean over the
    pairs; None under two pairs."""
    pairs = [p for p in rule.get("per_pair", []) if p.get("control") and p.get("candidate")]
    if len(pairs) < 2:
        return None
    spread = []
    for arm in ("control", "candidate"):
        logs = [math.log(p[arm]) for p in pairs]
        mean = statistics.fmean(logs)
        spread += [(x - mean) ** 2 for x in logs]
    return 100 * math.sqrt(sum(spread) / (2 * (len(pairs) - 1)))


def measured_pairs(root: Path, plan: dict) -> int:
    """The pairs whose both sessions finished (a stop receipt each), counted from the first."""
    n = 0
    while any(x["pair"] == n + 1 for x in plan["protocol"]["sessions"]) and all(
            (root / layout.receipt(x["id"], "stop")).is_file()
            for x in plan["protocol"]["sessions"] if x["pair"] == n + 1):
        n += 1
    return n


def sessions_of(root: Path, plan: dict) -> dict:
    """The sessions the tables read: every pair of a finished folder (it has
    comparison/bar.json), the pairs measured so far of one still being measured; each
    folder's raw files are read once, whichever tables ask."""
    return _loaded(root, None if (root / layout.BAR).is_file() else measured_pairs(root, plan))


@functools.cache
def _loaded(root: Path, pairs: int | None) -> dict:
    return load_sessions(jsonio.read(root / layout.PLAN, "plan"), root, pairs=pairs)


def unfinished_rules(root: Path, plan: dict) -> list[dict]:
    """A folder still being measured has no comparison/bar.json: each bar rule's figure per
    pair from the raw files of the pairs measured so far (knee.analyze.armfigures, as the bar
    computes it before any registered adjustment), with no MDE."""
    n = measured_pairs(root, plan)
    sessions = sessions_of(root, plan)
    rules = []
    for rule in plan["bar"]["rules"]:
        per_pair = []
        for pair in range(1, n + 1):
            control, candidate = (armfigures.arm_figures(
                sessions[(pair, arm)]["raw"][rule["instrument"]]).get(rule["point"], {})
                .get(rule["metric"]) for arm in ("control", "candidate"))
            per_pair.append({"pair": pair, "control": control, "candidate": candidate,
                             "delta_pct": armfigures.delta_pct(control, candidate)})
        rules.append({"rule": rule["name"], "per_pair": per_pair, "mde_pct": None})
    return rules


def set_effect(rule: dict, plan: dict) -> tuple[float, float] | None:
    """Where the arms swap sets between pairs (simultaneous and interleaved orders; in
    interleaved order set 2's engine boots once set 1's has): the set-2 arm's figure against
    the set-1 arm's (%) and its 90 % t half-width. In an A/A (no variable: the pairs' mean is
    zero by design) the mean over pairs of the effects signed by the candidate's set, from
    three pairs; in an A/B the set term of the effects fitted on a mean and the set
    (knee.analyze.robust.set_fit), from four, so that a real effect, whose sign the signing
    would flip from pair to pair, is not read as spread. Zero in truth where the sets are
    alike; it cancels from the pairs' mean over an even number of pairs, and widens their
    spread where it is not zero. None under that many pairs or without sets."""
    sets = together.candidate_sets(plan["protocol"])
    measured = [(1.0 if sets[p["pair"]] == 2 else -1.0, p["delta_pct"])
                for p in rule.get("per_pair", [])
                if p.get("delta_pct") is not None and p.get("pair") in sets]
    if plan.get("variable", NO_VARIABLE) != NO_VARIABLE:
        fit = robust.set_fit([d for _, d in measured], [s for s, _ in measured], 0.90)
        return None if fit is None else (fit.set_term, fit.set_half)
    signed = [s * d for s, d in measured]
    if len(signed) < 3:
        return None
    half = stats.t.ppf(0.95, len(signed) - 1) * statistics.stdev(signed) / math.sqrt(len(signed))
    return statistics.fmean(signed), float(half)


def rows(root: Path) -> list[dict]:
    """Each bar rule's row; for a folder still being measured, from the pairs measured so far
    (its design says how many of how many)."""
    plan = jsonio.read(root / layout.PLAN, "plan")
    order = plan["protocol"]["order"]
    design = order if isinstance(order, str) else "fixed " + "-".join(order)
    if (root / layout.BAR).is_file():
        rules = jsonio.read(root / layout.BAR, "bar")["rules"]
    else:
        rules = unfinished_rules(root, plan)
        design += f" ({measured_pairs(root, plan)} of {plan['protocol']['pairs']})"
    return [{"folder": root.name, "design": design, "rule": r["rule"],
             "pairs": len(r.get("per_pair", [])), "cv": between_pair_cv(r),
             "boot_cv": boot_cv(r), "mde": r.get("mde_pct"), "set": set_effect(r, plan)}
            for r in rules]


def request_split(root: Path, target_cv: float) -> dict | None:
    """The folder's single-stream noise split request by request (knee.analyze.requestsplit),
    with the requests an arm needs a pair for target_cv; None under two pairs."""
    plan = jsonio.read(root / layout.PLAN, "plan")
    split = requestsplit.split(requestsplit.log_ratios(sessions_of(root, plan)))
    if split is None:
        return None
    return {"folder": root.name, **split,
            "needed": math.ceil((split["request_sd"] / target_cv) ** 2)}


def sweep_points(root: Path) -> dict[tuple[int, str], list[dict]]:
    """Each measured session's sweep points (every run), by (pair, arm); sessions without the
    load instrument left out."""
    sessions = sessions_of(root, jsonio.read(root / layout.PLAN, "plan"))
    load = instruments.role(instruments.LOAD)
    return {key: s["raw"][load]["points"] for key, s in sessions.items() if load in s["raw"]}


def run_split(root: Path, target_cv: float) -> list[dict]:
    """Per sweep point, the pairs' throughput spread split run by run, as the single-stream
    spread is request by request (knee.analyze.requestsplit.split): each run's log ratio
    (candidate / control throughput of the same point and run), their pooled within-pair SD
    over √(runs a pair) against the pairs' measured spread, the boot part beyond it, and the
    runs a point needs a pair for target_cv. A run's turn in its ABBA block is not taken
    out: where going first matters, the prediction is the larger for it. With two runs a pair
    the run SD rests on as many degrees of freedom as pairs: a rough guide to which lever
    (runs, or pairs against a boot part) narrows a point. Points of under two pairs are
    left out."""
    sweeps = sweep_points(root)
    runs: dict[object, dict[int, list[float]]] = {}
    for (pair, arm), points in sweeps.items():
        if arm != "candidate":
            continue
        control = {(p["point"], p["run"]): point_summary(p)["throughput"]
                   for p in sweeps[(pair, "control")]}
        for p in points:
            a, b = control.get((p["point"], p["run"])), point_summary(p)["throughput"]
            if a and b:
                runs.setdefault(p["point"], {}).setdefault(pair, []).append(math.log(b / a))
    out = []
    for point, per_pair in sorted(runs.items(), key=lambda x: float(x[0])):
        if split := requestsplit.split(per_pair):
            out.append({"folder": root.name, "point": point, **split,
                        "needed": math.ceil((split["request_sd"] / target_cv) ** 2)})
    return out


def windows(root: Path) -> list[dict]:
    """Per sweep point, its windows in every measured session: how many, their length in
    seconds (shortest, longest) and the share of each one's time at its concurrency (lowest,
    median) and how many held under HELD; None for both where the client did not record it."""
    by_point: dict[object, list[dict]] = {}
    for points in sweep_points(root).values():
        for p in points:
            by_point.setdefault(p["point"], []).append(p)
    out = []
    for point, points in sorted(by_point.items(), key=lambda x: float(x[0])):
        walls = [p["wall_s"] for p in points]
        shares = [p["concurrency_held_share"] for p in points
                  if p.get("concurrency_held_share") is not None]
        out.append({"folder": root.name, "point": point, "windows": len(points),
                    "wall_s": (min(walls), max(walls)),
                    "held": (min(shares), statistics.median(shares)) if shares else None,
                    "under": sum(x < HELD for x in shares) if shares else None})
    return out


def measurement_time(root: Path) -> dict:
    """The folder's measured pairs, each pair's minutes from its first session's boot to its
    last session's stop (the boot receipts the other tables loaded, and the stop receipts),
    and their sum."""
    plan = jsonio.read(root / layout.PLAN, "plan")
    by_pair: dict[int, list[tuple[datetime, datetime]]] = {}
    for (pair, _), s in sessions_of(root, plan).items():
        stop = jsonio.read(root / layout.receipt(s["boot"]["session"], "stop"),
                           "stop")["stopped_at"]
        by_pair.setdefault(pair, []).append((datetime.fromisoformat(s["boot"]["started_at"]),
                                             datetime.fromisoformat(stop)))
    spans = [(max(b for _, b in t) - min(a for a, _ in t)).total_seconds() / 60
             for t in by_pair.values()]
    return {"folder": root.name, "pairs": len(spans), "minutes": sum(spans),
            "per_pair": (min(spans), max(spans)) if spans else None}


def against_first(out: list[dict]) -> list[dict]:
    """Each later folder's rules set against the first folder's rule of the same name: the
    variance ratio (first / later) and the one-sided F test's p that the later spreads as wide
    (None where either has under two pairs)."""
    first = {r["rule"]: r for r in out if r["folder"] == out[0]["folder"]}
    got = []
    for r in out:
        base = first.get(r["rule"])
        if r["folder"] == out[0]["folder"] or base is None:
            continue
        ratio = p = None
        if base["cv"] is not None and r["cv"]:
            ratio = (base["cv"] / r["cv"]) ** 2
            p = float(stats.f.sf(ratio, base["pairs"] - 1, r["pairs"] - 1))
        got.append({"folder": r["folder"], "rule": r["rule"], "ratio": ratio, "p": p})
    return got


def show_rules(out: list[dict]) -> None:
    print(f"{'folder':26} {'design':16} {'rule':24} {'pairs':>5} {'CV %':>6} {'boot %':>6} "
          f"{'√2 boot':>7} {'MDE %':>6} {'set 2 − set 1 %':>16}")
    for r in out:
        cv, boot = (("–" if v is None else f"{v:.2f}") for v in (r["cv"], r["boot_cv"]))
        apart = "–" if r["boot_cv"] is None else f"{math.sqrt(2) * r['boot_cv']:.2f}"
        mde = "–" if r["mde"] is None or math.isnan(r["mde"]) else f"{r['mde']:.2f}"
        sets = "–" if r["set"] is None else f"{r['set'][0]:+.2f} ± {r['set'][1]:.2f}"
        print(f"{r['folder']:26} {r['design']:16} {r['rule']:24} {r['pairs']:>5} {cv:>6} "
              f"{boot:>6} {apart:>7} {mde:>6} {sets:>16}")


def show_splits(results: list[Path], target_cv: float, target_sweep_cv: float) -> None:
    print(f"\nsingle stream, request by request (the same work in both arms):\n"
          f"{'folder':32} {'pairs':>5} {'req/pair':>8} {'req SD %':>8} {'predicted %':>11} "
          f"{'measured %':>10} {'boot part %':>11} {f'req for {target_cv:g} %':>14}")
    for root in results:
        s = request_split(root, target_cv)
        if s is None:
            print(f"{root.name:32} under two pairs of requests of the same work")
            continue
        print(f"{s['folder']:32} {s['pairs']:>5} {s['requests']:>8.1f} {s['request_sd']:>8.2f} "
              f"{s['predicted']:>11.2f} {s['measured']:>10.2f} {s['boot']:>11.2f} "
              f"{s['needed']:>14}")
    print(f"\nsweep, run by run (each run's throughput ratio, the same point and run):\n"
          f"{'folder':32} {'point':>5} {'pairs':>5} {'runs':>5} {'run SD %':>8} "
          f"{'predicted %':>11} {'measured %':>10} {'boot part %':>11} "
          f"{f'runs for {target_sweep_cv:g} %':>14}")
    for root in results:
        for s in run_split(root, target_sweep_cv):
            print(f"{s['folder']:32} {s['point']!s:>5} {s['pairs']:>5} {s['requests']:>5.1f} "
                  f"{s['request_sd']:>8.2f} {s['predicted']:>11.2f} {s['measured']:>10.2f} "
                  f"{s['boot']:>11.2f} {s['needed']:>14}")


def show_windows(results: list[Path]) -> None:
    print(f"\nsweep windows (every run of every arm; held: the share of a window's time at its "
          f"concurrency):\n{'folder':32} {'point':>5} {'windows':>7} {'seconds':>11} "
          f"{'held lowest':>11} {'median':>6} {f'under {HELD:.0%}':>9}")
    for root in results:
        for w in windows(root):
            held = ("–", "–") if w["held"] is None else (f"{w['held'][0]:.1%}",
                                                         f"{w['held'][1]:.1%}")
            print(f"{w['folder']:32} {w['point']!s:>5} {w['windows']:>7} "
                  f"{w['wall_s'][0]:>5.1f}–{w['wall_s'][1]:<5.1f} {held[0]:>11} {held[1]:>6} "
                  f"{'–' if w['under'] is None else w['under']:>9}")


def show_time(results: list[Path]) -> None:
    print(f"\nmeasurement time (each pair from its first boot to its last stop, summed):\n"
          f"{'folder':32} {'pairs':>5} {'minutes':>8} {'a pair, min–max':>16}")
    for root in results:
        t = measurement_time(root)
        span = "–" if t["per_pair"] is None else \
            f"{t['per_pair'][0]:.1f}–{t['per_pair'][1]:.1f}"
        print(f"{t['folder']:32} {t['pairs']:>5} {t['minutes']:>8.1f} {span:>16}")


def show_against(results: list[Path], out: list[dict]) -> None:
    print(f"\nset against {results[0].name} (variance ratio, first / this; one-sided F "
          f"test's p that this spreads as wide):\n{'folder':32} {'rule':24} {'ratio':>7} "
          f"{'p':>7}")
    for r in against_first(out):
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.2f}"
        p = "–" if r["p"] is None else f"{r['p']:.3f}"
        print(f"{r['folder']:32} {r['rule']:24} {ratio:>7} {p:>7}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="*", type=Path,
                    default=[ROOT / "results" / n for n in ("aa-h200-35b-pinned",
                                                            "calib-h200-35b")])
    ap.add_argument("--target-cv", type=float, default=0.7,
                    help="the between-pair CV (%%) to size the requests for (default 0.7)")
    ap.add_argument("--target-sweep-cv", type=float, default=1.0,
                    help="the between-pair CV (%%) to size a sweep point's runs for "
                         "(default 1.0)")
    a = ap.parse_args()
    out = [r for root in a.results for r in rows(root)]
    show_rules(out)
    show_splits(a.results, a.target_cv, a.target_sweep_cv)
    show_windows(a.results)
    show_time(a.results)
    if len(a.results) > 1:
        show_against(a.results, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
