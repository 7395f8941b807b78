"""The planner from a pilot: the pairs and single-stream requests that resolve a paired
single-stream rule to a target MDE in the least GPU time, from a published A/A of the same
server in the same protocol order.

The pilot's noise is split request by request (knee.analyze.requestsplit): one request's log
ratio spreads request_sd, and each pair carries a boot part besides. At n requests an arm a
pair (the rule's classes times the requests a class), a pair's effect then spreads
√(boot² + request_sd² / n), and the rule's MDE is knee's own (knee.analyze.inference.mde_pct)
at that SD. As knee.analyze.adjust.design does, the plan holds at the upper LEVEL confidence
bound of the noise: request_sd's chi-square bound on its degrees of freedom, and the boot part
left under the bound of the pairs' measured spread (pairs less one degree of freedom) once the
requests' share is taken out; each predicted MDE is shown from the estimate to that bound. A
pair's time is the pilot's: its span less its single-stream requests, plus the planned
requests of both arms at the pilot's mean request time.
"""

from __future__ import annotations

import math
import statistics
from datetime import datetime
from pathlib import Path
from typing import NamedTuple, TypedDict

from knee import instruments
from knee.analyze import inference, requestsplit
from knee.analyze.adjust.design import LEVEL, MAX_PAIRS, chi2_low
from knee.analyze.folder import Sessions, load_sessions, load_stops
from knee.core import jsonio, layout
from knee.core.errors import KneeError
from knee.core.records import Config, Plan
from knee.core.records.verdict import RequestSplit
from knee.plan import arms, stopping

MAX_REQUESTS = 512  # a class's requests a pair the planner goes up to
METRIC = "decode_rate_gmean"  # the paired figure: the mean of each request's own log ratio


class PilotProtocol(TypedDict):
    """A protocol priced from the pilot: pairs, requests a class, GPU minutes, MDE range."""

    pairs: int
    requests: int
    gpu_minutes: float
    mde_pct: dict[str, list[float]]


class PilotPlan(TypedDict):
    """What `knee design --pilot` answers."""

    pilot: str
    target_mde_pct: float
    alpha: float
    split: RequestSplit
    request_s: float
    pair_fixed_s: float
    classes: dict[str, int]  # per planned rule, how many classes its point pools
    skipped: dict[str, str]  # rules not planned from a pilot, and why
    notes: list[str]
    best: PilotProtocol | None
    config: PilotProtocol


def pair_sd(split: RequestSplit, n: float, bound: bool = False) -> float:
    """One pair's effect SD (log) at n requests an arm a pair; with `bound`, at the noise's
    upper confidence bound."""
    request = split["request_sd"] / 100
    boot = split["boot"] / 100
    if bound:
        df = split["pairs"] - 1
        measured = split["measured"] / 100 * math.sqrt(df / chi2_low(df))
        boot = math.sqrt(max(measured ** 2 - (request / math.sqrt(split["requests"])) ** 2,
                             0.0))
        request *= math.sqrt(split["request_df"] / chi2_low(split["request_df"]))
    return math.sqrt(boot ** 2 + request ** 2 / n)


def mde_range(split: RequestSplit, pairs: int, n: float,
              alpha: float) -> list[float]:
    """The predicted MDE (%) from the noise as estimated to its upper bound."""
    out = [inference.mde_pct(inference.Effect(pairs, 0.0, pair_sd(split, n, bound)), alpha)
           for bound in (False, True)]
    return [round(m, 2) for m in out if m is not None]


def pair_seconds(plan: Plan, root: Path, sessions: Sessions) -> list[float]:
    """Each pilot pair's span, its first boot to its last stop (both arms, any order)."""
    stops = load_stops(plan, root)
    spans: dict[int, list[float]] = {}
    for (pair, arm), s in sessions.items():
        receipt = stops.get(f"{pair}-{arm}")
        stop = receipt.get("stopped_at") if receipt else None
        start = s["boot"].get("started_at")
        if start and stop:
            try:
                spans.setdefault(pair, []).extend(
                    [datetime.fromisoformat(start).timestamp(),
                     datetime.fromisoformat(stop).timestamp()])
            except ValueError:
                raise KneeError(f"{root}: receipts of session {pair}-{arm}: started_at "
                                f"{str(start)[:40]!r} or stopped_at {str(stop)[:40]!r} is "
                                "not a time (ISO 8601)") from None
    return [max(v) - min(v) for v in spans.values() if len(v) == 4]


def read_pilot(root: Path, config: Config) -> tuple[Plan, Sessions]:
    """The pilot's plan and sessions; a pilot that is not an A/A of the config's model in the
    config's protocol order is refused, naming what differs."""
    plan: Plan = jsonio.read(root / layout.PLAN, "plan")
    where = f"knee design: --pilot {root}"
    if plan.get("variable") != "none":
        raise KneeError(f"{where}: its variable is {plan.get('variable')!r}: a pilot is an A/A "
                        "(variable: none), whose pairs' spread is all noise")
    for what, mine, theirs in (
            ("model.name", config["model"].get("name"), plan["model"].get("name")),
            ("protocol.order", config["protocol"].get("order"), plan["protocol"].get("order"))):
        if mine != theirs:
            raise KneeError(f"{where}: its {what} is {theirs!r} and the config's {mine!r}: the "
                            "noise of another server or order plans nothing here")
    return plan, load_sessions(plan, root)


def server_notes(plan: Plan, config: Config) -> list[str]:
    """Where the pilot's server differs from the config's control arm: its noise is the
    pilot's server's, which the planner says rather than refuses (a setting may move it little)."""
    apart = arms.differences(plan["arms"]["control"], arms.resolve_arms(config)["control"])
    if not apart:
        return []
    shown = "; ".join(f"{k}: {a!r} there, {b!r} here" for k, a, b in apart[:6])
    more = f" and {len(apart) - 6} more" if len(apart) > 6 else ""
    return [f"the pilot's server is not this config's control arm ({shown}{more}): the noise "
            "planned from is the pilot's server's"]


def planned_rules(config: Config) -> tuple[dict[str, int], dict[str, str]]:
    """The rules a pilot plans (the paired single-stream figure), each with the classes its
    point pools; the others, with why not."""
    single = instruments.role(instruments.SINGLE_STREAM)
    classes = config["instruments"].get(single, {}).get("classes", [])
    planned: dict[str, int] = {}
    skipped: dict[str, str] = {}
    for r in config["bar"]["rules"]:
        if r["instrument"] != single or r["metric"] != METRIC:
            skipped[r["name"]] = (f"{r['instrument']} {r['metric']}: a pilot plans only the "
                                  f"paired single-stream figure ({single} {METRIC})")
        else:
            planned[r["name"]] = len(classes) if r["point"] == "all" else 1
    return planned, skipped


class Costs(NamedTuple):
    """What a pair costs: its time besides single-stream requests, a request's time, and the
    classes the fixture sends requests of."""

    fixed_s: float
    request_s: float
    classes: int


def price(split: RequestSplit, rules: dict[str, int], alpha: float,
          pairs: int, requests: int, costs: Costs) -> PilotProtocol:
    """A protocol of `pairs` pairs and `requests` requests a class: both arms' requests of
    every class each pair, and each rule's MDE at the requests its point pools."""
    single_s = 2 * requests * costs.classes * costs.request_s
    return {"pairs": pairs, "requests": requests,
            "gpu_minutes": round(pairs * (costs.fixed_s + single_s) / 60, 1),
            "mde_pct": {name: mde_range(split, pairs, requests * k, alpha)
                        for name, k in rules.items()}}


def cheapest(split: RequestSplit, rules: dict[str, int], alpha: float,
             target: float, costs: Costs, bound: bool = True) -> PilotProtocol | None:
    """The protocol of least GPU time whose every planned rule's MDE, at the noise's upper
    bound (or, without `bound`, as estimated), is at most the target; None where none up to
    MAX_PAIRS and MAX_REQUESTS is."""
    best: PilotProtocol | None = None
    for pairs in range(2, MAX_PAIRS + 1):
        for requests in range(1, MAX_REQUESTS + 1):
            p = price(split, rules, alpha, pairs, requests, costs)
            if all(len(m) == 2 and m[int(bound)] <= target for m in p["mde_pct"].values()):
                if best is None or p["gpu_minutes"] < best["gpu_minutes"]:
                    best = p
                break
    return best


def plan_from_pilot(root: Path, config: Config, target: float) -> PilotPlan:
    """What `knee design --pilot` prints."""
    plan, sessions = read_pilot(root, config)
    rules, skipped = planned_rules(config)
    if not rules:
        raise KneeError(f"knee design: --config: no bar rule on the paired single-stream "
                        f"figure ({METRIC}); a pilot plans only that: " + "; ".join(
                            f"{n}: {why}" for n, why in skipped.items()))
    split = requestsplit.split(requestsplit.log_ratios(sessions))
    request_s = requestsplit.request_seconds(sessions)
    spans = pair_seconds(plan, root, sessions)
    if split is None or request_s is None or not spans:
        raise KneeError(f"knee design: --pilot {root}: under two finished pairs whose arms sent "
                        "single-stream requests for the same work: nothing to plan from")
    fixed = max(0.0, statistics.median(spans) - 2 * split["requests"] * request_s)
    alpha = config["bar"]["alpha"]
    single = config["instruments"][instruments.role(instruments.SINGLE_STREAM)]
    own, costs = single["requests"], Costs(fixed, request_s, len(single.get("classes", [])))
    pairs = stopping.bounds(config["protocol"]["pairs"])[1]  # a sequential stop's most
    return {"pilot": str(root), "target_mde_pct": target, "alpha": alpha, "split": split,
            "request_s": request_s, "pair_fixed_s": fixed, "classes": rules,
            "skipped": skipped, "notes": server_notes(plan, config),
            "best": cheapest(split, rules, alpha, target, costs),
            "config": price(split, rules, alpha, pairs, own, costs)}


def protocol_block(best: PilotProtocol) -> str:
    """The YAML to paste into the config for a planned protocol."""
    return (f"protocol:\n  pairs: {best['pairs']}\ninstruments:\n"
            f"  {instruments.role(instruments.SINGLE_STREAM)}:\n"
            f"    requests: {best['requests']}\n")


def report(out: PilotPlan) -> str:
    """The pilot plan as text."""
    s = out["split"]

    def line(name: str, p: PilotProtocol | None) -> str:
        if p is None:
            return (f"{name}: no protocol up to {MAX_PAIRS} pairs and {MAX_REQUESTS} requests "
                    f"a class reaches an MDE of {out['target_mde_pct']}% at the bound")
        mdes = ", ".join(f"{r} {m[0]:.2f}–{m[1]:.2f}%" if len(m) == 2 else f"{r} unknown"
                         for r, m in p["mde_pct"].items())
        return (f"{name}: {p['pairs']} pairs, {p['requests']} single-stream requests a class: "
                f"{p['gpu_minutes']} GPU minutes; predicted MDE {mdes}")
    lines = [
        f"pilot {out['pilot']}: {s['pairs']} pairs, {s['requests']:.1f} requests a pair of the "
        f"same work in both arms; one request's log ratio spreads {s['request_sd']:.2f}%, the "
        f"pairs' means {s['measured']:.2f}% where the requests predict {s['predicted']:.2f}% "
        f"(boot part {s['boot']:.2f}%); a request takes {out['request_s']:.2f} s, a pair "
        f"{out['pair_fixed_s']:.0f} s besides its single-stream requests",
        f"target MDE {out['target_mde_pct']}% (alpha {out['alpha']}, 80% power) at the upper "
        f"{LEVEL:.0%} confidence bound of the pilot's noise; each predicted MDE from the noise "
        "as estimated to that bound:",
        line("planned", out["best"]), line("this config as it stands", out["config"])]
    lines += [f"not planned: {n}: {why}" for n, why in out["skipped"].items()]
    lines += [f"note: {n}" for n in out["notes"]]
    if out["best"]:
        lines += ["", "# the protocol to paste:", protocol_block(out["best"]).rstrip()]
    return "\n".join(lines)
