"""Judge the pre-registered bar: PASS, FAIL or INCONCLUSIVE per rule, on an interval (pure).

A rule's effect is computed over boot pairs by knee.analyze.inference from the per-pair
figures of the comparison; each pair's own delta stays visible (the reference write-ups'
convention) but has no verdict.
"""

from __future__ import annotations

from knee.analyze import inference
from knee.plan import stopping


def find(rows: list[dict], pair, rule: dict) -> dict | None:
    for r in rows:
        if (r["pair"] == pair and r["instrument"] == rule["instrument"]
                and r["metric"] == rule["metric"] and str(r["point"]) == str(rule["point"])):
            return r
    return None


def rule_words(rule: dict) -> str:
    if "within_pct" in rule:
        return f"interval inside ±{rule['within_pct']}%"
    return f"interval above {rule['min_gain_pct']:+}%"


def judge_rule(rows: list[dict], pairs: int, rule: dict, alpha: float) -> dict:
    out = {"rule": rule["name"], "instrument": rule["instrument"], "point": rule["point"],
           "metric": rule["metric"], "test": rule_words(rule)}
    found = [find(rows, p, rule) for p in range(1, pairs + 1)]
    if any(r is None or r["delta_pct"] is None for r in found):
        return {**out, "verdict": "INVALID", "reason": "no measurement for this rule in pair "
                + ", ".join(str(p) for p, r in enumerate(found, 1)
                            if r is None or r["delta_pct"] is None)}
    per_pair = [{"pair": p, "control": r["control"], "candidate": r["candidate"],
                 "delta_pct": r["delta_pct"]} for p, r in enumerate(found, 1)]
    eff = inference.effect([inference.log_ratio(r["control"], r["candidate"]) for r in found])
    if eff is None or eff.n < pairs:
        return {**out, "verdict": "INVALID", "per_pair": per_pair,
                "reason": "a pair has no positive figure for this rule"}
    level = 1 - 2 * alpha
    bounds = eff.bounds(level)
    verdict = inference.decide(rule, bounds)
    return {**out, "verdict": verdict, "estimate": inference.to_pct(eff.mean),
            "interval": eff.interval_pct(level), "interval_level": inference.PAIRS,
            "confidence": level, "pairs": eff.n,
            "pairs_needed": inference.pairs_needed(rule, eff, alpha),
            "mde_pct": inference.mde_pct(eff, alpha), "per_pair": per_pair,
            **({} if bounds else {"reason": "one boot pair: no interval over boots, so no "
                                            "verdict; run at least two pairs"})}


def overall(verdicts: list[str]) -> str:
    """PASS only if every rule passes; FAIL if any fails; INVALID if any cannot be judged."""
    for v in ("INVALID", "FAIL", "INCONCLUSIVE"):
        if v in verdicts:
            return v
    return "PASS"


def judge(comparison: dict, bar: dict, pairs: int, bar_sha256: str,
          measured_bar_sha256: set[str], looks: int = 1) -> dict:
    """The bar over `pairs` pairs; with `looks` > 1 (stopping by precision) every rule decides
    at the alpha knee.plan.stopping spends on each look."""
    changed = any(h != bar_sha256 for h in measured_bar_sha256)
    alpha = stopping.alpha_per_look(bar["alpha"], looks)
    base = {"experiment": comparison["experiment"], "bar": bar, "bar_sha256": bar_sha256,
            "bar_changed": changed, "alpha": bar["alpha"], "looks": looks,
            "alpha_per_look": alpha, "pairs": pairs, "method": inference.VERDICT_METHOD}
    if comparison["verdict"] != "VALID":
        return {**base, "verdict": "INVALID", "rules": [],
                "reason": "the comparison failed validation: no delta is judged"}
    rules = [judge_rule(comparison["rows"], pairs, r, alpha) for r in bar["rules"]]
    verdict = overall([r["verdict"] for r in rules])
    if (found := confounds(comparison, bar)) and verdict != "INVALID":
        return {**base, "verdict": "CONFOUNDED", "rules": rules, "confounds": found,
                "rules_verdict": verdict}
    return {**base, "verdict": verdict, "rules": rules}


def confounds(comparison: dict, bar: dict) -> list[dict]:
    """The engine-side differences between the arms beyond the variable (what each boot's
    engine said it resolved) that the bar did not pre-register: one variable means one
    variable as the engine ran it."""
    expected = bar.get("expected_engine_differences") or []
    return [d for d in comparison.get("engine_differences") or []
            if not any(e in d["what"] for e in expected)]


def judge_plan(plan: dict, comparison: dict, boots: list[dict]) -> dict:
    """The plan's bar over the pairs that ran, each rule at the bar's alpha spent over the
    protocol's looks; the bar hashes recorded at boot tell whether it changed since."""
    pairs = len({b["pair"] for b in boots})
    return judge(comparison, plan["bar"], pairs, plan["bar_sha256"],
                 {b["bar_sha256"] for b in boots},
                 looks=stopping.looks(plan["protocol"]["pairs"]))
