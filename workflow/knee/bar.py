"""Judge the pre-registered bar per pair and overall (pure)."""

from __future__ import annotations


def find(rows: list[dict], pair: int, rule: dict) -> dict | None:
    for r in rows:
        if (r["pair"] == pair and r["instrument"] == rule["instrument"]
                and r["metric"] == rule["metric"] and str(r["point"]) == str(rule["point"])):
            return r
    return None


def judge_rule(row: dict | None, rule: dict) -> dict:
    out = {"rule": rule["name"], "instrument": rule["instrument"], "point": rule["point"],
           "metric": rule["metric"]}
    if row is None or row["delta_pct"] is None:
        return {**out, "verdict": "INVALID", "reason": "no measurement for this rule"}
    d = row["delta_pct"]
    if "within_pct" in rule:
        ok = abs(d) <= rule["within_pct"]
        test = f"abs({d:+.2f}%) <= {rule['within_pct']}%"
    else:
        ok = d >= rule["min_gain_pct"]
        test = f"{d:+.2f}% >= +{rule['min_gain_pct']}%"
    return {**out, "verdict": "PASS" if ok else "FAIL", "test": test,
            "control": row["control"], "candidate": row["candidate"], "delta_pct": d,
            "noise": row.get("noise", "noise not measured"), "ci95": row.get("ci95")}


def judge(comparison: dict, bar: dict, pairs: int, bar_sha256: str,
          measured_bar_sha256: set[str]) -> dict:
    changed = any(h != bar_sha256 for h in measured_bar_sha256)
    base = {"experiment": comparison["experiment"], "bar": bar, "bar_sha256": bar_sha256,
            "bar_changed": changed}
    if comparison["verdict"] != "VALID":
        return {**base, "verdict": "INVALID", "pairs": [],
                "reason": "the comparison failed validation: no delta is judged"}
    per_pair = []
    for pair in range(1, pairs + 1):
        rules = [judge_rule(find(comparison["rows"], pair, r), r) for r in bar["rules"]]
        verdicts = {r["verdict"] for r in rules}
        v = "INVALID" if "INVALID" in verdicts else ("FAIL" if "FAIL" in verdicts else "PASS")
        per_pair.append({"pair": pair, "verdict": v, "rules": rules})
    vs = [p["verdict"] for p in per_pair]
    if "INVALID" in vs:
        overall = "INVALID"
    elif bar.get("pairs", "all") == "all":
        overall = "PASS" if all(v == "PASS" for v in vs) else "FAIL"
    else:
        overall = "PASS" if any(v == "PASS" for v in vs) else "FAIL"
    return {**base, "verdict": overall, "pairs": per_pair}
