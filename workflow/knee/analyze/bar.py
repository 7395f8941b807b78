"""Judge the pre-registered bar: PASS, FAIL or INCONCLUSIVE per rule, on an interval (pure).

A rule's effect is computed over boot pairs by knee.analyze.inference from the per-pair
figures of the comparison; each pair's own delta stays visible (the reference write-ups'
convention) but has no verdict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from knee.analyze import hosts, inference, robust, samework
from knee.analyze.adjust import covariate
from knee.core import rulekinds
from knee.core.records import BarRule, BarVerdict, ComparisonRow, Judged, Plan, RuleVerdict
from knee.core.records.covariate import Adjustment, ContrastSection
from knee.core.records.engine import EngineDifference, Excused
from knee.core.records.verdict import RegisteredAdjust
from knee.plan import adjust as registered
from knee.plan import stopping, together


def find(rows: Sequence[ComparisonRow], pair: int | str,
         rule: BarRule) -> ComparisonRow | None:
    for r in rows:
        if (r["pair"] == pair and r["instrument"] == rule["instrument"]
                and r["metric"] == rule["metric"] and str(r["point"]) == str(rule["point"])):
            return r
    return None


def judge_rule(rows: Sequence[ComparisonRow], pairs: int, rule: BarRule, alpha: float,
               adjust: RegisteredAdjust | None = None,
               comparison: Mapping[str, Any] | None = None) -> RuleVerdict:
    out: RuleVerdict = {"rule": rule["name"], "instrument": rule["instrument"],
                        "point": rule["point"], "metric": rule["metric"],
                        "test": rulekinds.test_words(rule), "verdict": "INVALID"}
    found = [find(rows, p, rule) for p in range(1, pairs + 1)]
    if any(r is None or r["delta_pct"] is None for r in found):
        out["reason"] = "no measurement for this rule in pair " + ", ".join(
            str(p) for p, r in enumerate(found, 1) if r is None or r["delta_pct"] is None)
        return out
    present = [r for r in found if r is not None]  # every pair's
    out["per_pair"] = [{"pair": p, "control": r["control"], "candidate": r["candidate"],
                        "delta_pct": r["delta_pct"]} for p, r in enumerate(present, 1)]
    effects = [inference.log_ratio(r["control"], r["candidate"]) for r in present]
    eff = inference.effect(effects)
    if eff is None or eff.n < pairs:
        out["reason"] = "a pair has no positive figure for this rule"
        return out
    level = 1 - 2 * alpha
    if adjust is not None:
        known = [e for e in effects if e is not None]  # all of them: eff.n is every pair
        adjustment, eff_adj = adjusted_effect(comparison or {}, rule, pairs, known, adjust,
                                              level)
        out["adjustment"] = adjustment
        if eff_adj is not None:
            out["unadjusted"] = dict(judged(rule, eff, alpha, level))
            eff = eff_adj
    decided: RuleVerdict = {**out, **judged(rule, eff, alpha, level)}
    return decided


def judged(rule: BarRule, eff: inference.Effect, alpha: float,
           level: float) -> Judged:
    """A rule's verdict on an effect over pairs, with its interval, MDE and pairs needed."""
    bounds = eff.bounds(level)
    out: Judged = {
        "verdict": inference.decide(rule, bounds), "estimate": inference.to_pct(eff.mean),
        "interval": eff.interval_pct(level), "interval_level": inference.PAIRS,
        "confidence": level, "pairs": eff.n,
        "pairs_needed": inference.pairs_needed(rule, eff, alpha),
        "mde_pct": inference.mde_pct(eff, alpha)}
    if not bounds:
        out["reason"] = ("one boot pair: no interval over boots, so no verdict; run at least "
                         "two pairs")
    return out


def adjusted_effect(comparison: Mapping[str, Any], rule: BarRule, pairs: int,
                    effects: list[float],
                    adjust: RegisteredAdjust, level: float) -> tuple[Adjustment,
                    inference.Effect | None]:
    """The registered covariate adjustment of one rule (knee.analyze.adjust.covariate): what it did,
    and the adjusted effect over pairs (None where it is withheld, and the reason why)."""
    slope = adjust["slopes"][rule["name"]]
    ratios = covariate.speed_ratios(comparison, rule, pairs)
    out: Adjustment = {"covariate": covariate.name_of(comparison), "slope": slope,
                       "tolerance_pct": adjust["tolerance_pct"], "applied": False}
    if any(x is None for x in ratios):
        missing = [str(p) for p, x in enumerate(ratios, 1) if x is None]
        return {**out, "reason": "no host speed was sampled for this figure "
                f"in pair {', '.join(missing)}: judged as measured"}, None
    speeds = [x for x in ratios if x is not None]
    check = covariate.balance(speeds, level)
    out["balance"] = check
    if adjust.get("withheld"):
        return {**out, "reason": adjust["withheld"]}, None
    if not covariate.balanced(check, adjust["tolerance_pct"]):
        shown = (f"{check['estimate_pct']:+.2f}% [{check['interval'][0]:+.2f}, "
                 f"{check['interval'][1]:+.2f}]" if check["interval"] else "one pair, no "
                 "interval")
        return {**out, "reason": (
            f"the arms' host speed differed by {shown}: not shown inside the registered "
            f"tolerance of ±{adjust['tolerance_pct']}%, so an arm may have moved the "
            "covariate; the adjustment is withheld and the rule judged as measured")}, None
    eff = inference.effect(covariate.adjusted(effects, speeds, slope))
    return {**out, "applied": True}, eff


def withheld(contrast: ContrastSection) -> str:
    """Why no rule is adjusted: the arms' speed difference differs between the figures' spans."""
    moved = next(c for c in contrast["contrasts"] if not c["shown_zero"])
    lo, hi = moved["interval"] or (None, None)
    shown = f"{moved['estimate_pct']:+.2f}% [{lo:+.2f}, {hi:+.2f}]" if lo is not None else \
        "one pair, no interval"
    return (f"the arms' host speed difference in the span of {moved['rules'][0]} less that in "
            f"the span of {moved['rules'][1]} is {shown}: not shown inside ±"
            f"{contrast['tolerance_pct']}%, so the change itself may move the covariate; the "
            "adjustment is withheld from every rule, each judged as measured")


def overall(verdicts: list[str]) -> str:
    """PASS only if every rule passes; FAIL if any fails; INVALID if any cannot be judged."""
    for v in ("INVALID", "FAIL", "INCONCLUSIVE"):
        if v in verdicts:
            return v
    return "PASS"


def judge(comparison: Mapping[str, Any], bar: Mapping[str, Any], pairs: int, bar_sha256: str,
          measured_bar_sha256: set[str], looks: int = 1,
          adjust: RegisteredAdjust | None = None) -> BarVerdict:
    """The bar over `pairs` pairs; with `looks` > 1 (stopping by precision) every rule decides
    at the alpha knee.plan.stopping spends on each look."""
    changed = any(h != bar_sha256 for h in measured_bar_sha256)
    alpha = stopping.alpha_per_look(bar["alpha"], looks)
    out: BarVerdict = {
        "experiment": comparison["experiment"], "verdict": "INVALID", "rules": [],
        "bar": dict(bar), "bar_sha256": bar_sha256, "bar_changed": changed,
        "alpha": bar["alpha"], "looks": looks, "alpha_per_look": alpha, "pairs": pairs,
        "method": inference.VERDICT_METHOD}
    if comparison["verdict"] != "VALID":
        out["reason"] = "the comparison failed validation: no delta is judged"
        return out
    if adjust is not None and (contrast := covariate.contrasts(
            comparison, bar["rules"], pairs, 1 - 2 * alpha, adjust["tolerance_pct"])):
        out["covariate_contrast"] = contrast
        adjust = adjust if contrast["shown_zero"] else {**adjust, "withheld": withheld(contrast)}
    out["rules"] = [judge_rule(comparison["rows"], pairs, r, alpha, adjust, comparison)
                    for r in bar["rules"]]
    out["verdict"] = overall([r["verdict"] for r in out["rules"]])
    if found := excused(comparison, bar):
        out["excused"] = found
    if (differed := confounds(comparison, bar)) and out["verdict"] != "INVALID":
        out["confounds"], out["rules_verdict"] = differed, out["verdict"]
        out["verdict"] = "CONFOUNDED"
    return out


def confounds(comparison: Mapping[str, Any],
              bar: Mapping[str, Any]) -> list[EngineDifference]:
    """The engine-side differences between the arms beyond the variable (what each boot's
    engine said it resolved) that the bar did not pre-register: one variable means one
    variable as the engine ran it; and each point where more of the paired requests generated
    different tokens than the bar's max_divergent_share allows (the arms did different work)."""
    return [d for d in comparison.get("engine_differences") or []
            if excused_by(d, bar) is None] \
        + samework.divergences(comparison, bar.get("max_divergent_share"))


# a setting the engine changed, as its log says it or as knee states an argument the arms ran
# with differently: NAME from A to B (the form bar.expected_engine_differences registers)
SETTING = re.compile(r"\b([A-Za-z_][A-Za-z0-9_.-]*) from (\S+?) to (\S+?)(?=[.,;:]?(?:\s|$))")


def settings(difference: Mapping[str, Any]) -> set[str]:
    """Every `NAME from A to B` a difference states (an engine argument's own: its key from
    the control's value to the candidate's)."""
    if difference.get("setting"):
        return {difference["setting"]}
    return {" ".join((m[1], "from", m[2], "to", m[3]))
            for m in SETTING.finditer(difference["what"])}


def excused_by(difference: Mapping[str, Any], bar: Mapping[str, Any]) -> str | None:
    """The registered expected difference that names this one's setting and both its values
    exactly, or is the whole sentence the engine logged (never a piece of its text: an entry
    of one word would excuse everything)."""
    found = settings(difference) | ({difference["what"].strip()}
                                    if difference.get("kind") == "engine change" else set())
    return next((e for e in bar.get("expected_engine_differences") or [] if e in found), None)


def excused(comparison: Mapping[str, Any], bar: Mapping[str, Any]) -> list[Excused]:
    """Each engine difference the bar expected, with the registered entry that excused it."""
    return [{"what": d["what"], "by": by} for d in comparison.get("engine_differences") or []
            if (by := excused_by(d, bar)) is not None]


def judge_plan(plan: Plan, comparison: Mapping[str, Any],
               boots: Sequence[Mapping[str, Any]]) -> BarVerdict:
    """The plan's bar over the pairs that ran, each rule at the bar's alpha spent over the
    protocol's looks; the bar hashes recorded at boot tell whether it changed since; where the
    sessions ran on several hosts, what each host measured (knee.analyze.hosts)."""
    pairs = len({b["pair"] for b in boots})
    out = judge(comparison, plan["bar"], pairs, plan["bar_sha256"],
                {b["bar_sha256"] for b in boots},
                looks=stopping.looks(plan["protocol"]["pairs"]), adjust=registered_adjust(plan))
    if out["rules"] and (where := hosts.section(plan["bar"]["rules"], out["rules"], boots,
                                                comparison, out["alpha_per_look"])):
        out["hosts"] = where
    if out["rules"]:
        by_pair = hosts.pair_hosts(boots)
        sets = together.candidate_sets(plan["protocol"])
        for rule, verdict in zip(plan["bar"]["rules"], out["rules"], strict=True):
            if verdict.get("per_pair") and verdict.get("estimate") is not None:
                _, used = covariate.used_effects(rule, verdict, comparison)
                verdict["robustness"] = robust.section(rule, verdict, used, by_pair,
                                                       1 - 2 * out["alpha_per_look"], sets)
        out["family"] = robust.family(plan["bar"]["rules"], out["alpha_per_look"])
    return out


def registered_adjust(plan: Plan) -> RegisteredAdjust | None:
    """The covariate adjustment the plan registers (bar.adjust, the slopes of its embedded
    calibration per rule), or None."""
    adjust = (plan.get("bar") or {}).get("adjust")
    if not adjust:
        return None
    return {"tolerance_pct": adjust["tolerance_pct"],
            "slopes": registered.slopes(plan["calibration"]["document"], plan["bar"]["rules"])}
