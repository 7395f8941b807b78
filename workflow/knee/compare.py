"""Validate that the two arms saw the same requests, then compute deltas (pure).

No delta is computed unless every request profile, prompt fingerprint, model hash and
engine version matches, and the resolved servers differ only in the declared variable.
"""

from __future__ import annotations

from knee.config import differences
from knee.stats import decode_rate, pct, point_summary

METRICS = ("throughput", "decode_rate_p50", "ttft_p50")


def _profiles(raw: dict) -> dict[tuple, dict]:
    return {(raw["instrument"], p["point"], p["run"]): p["profile"] for p in raw["points"]}


def validate_pair(pair: int, control: dict, candidate: dict, variable: str) -> tuple[list, list]:
    """control/candidate: {"boot": receipt, "raw": {instrument: raw}}. Returns (checked, bad)."""
    checked: list[str] = []
    bad: list[dict] = []

    def cmp(where: str, field: str, a, b) -> None:
        checked.append(f"{where}:{field}")
        if a != b:
            bad.append({"where": where, "field": field, "control": a, "candidate": b})

    for inst in sorted(set(control["raw"]) | set(candidate["raw"])):
        pa = _profiles(control["raw"].get(inst, {"instrument": inst, "points": []}))
        pb = _profiles(candidate["raw"].get(inst, {"instrument": inst, "points": []}))
        for key in sorted(set(pa) | set(pb), key=str):
            where = f"pair {pair} {key[0]} point={key[1]} run={key[2]}"
            if key not in pa or key not in pb:
                cmp(where, "present", key in pa, key in pb)
                continue
            for field in sorted(set(pa[key]) | set(pb[key])):
                cmp(where, field, pa[key].get(field), pb[key].get(field))
    ba, bb = control["boot"], candidate["boot"]
    where = f"pair {pair} boot receipts"
    cmp(where, "model.sha256", ba["model"].get("sha256"), bb["model"].get("sha256"))
    cmp(where, "engine.packages", ba["engine"]["packages"], bb["engine"]["packages"])
    cmp(where, "runtime", ba["runtime"], bb["runtime"])
    for key, a, b in differences(ba["server"], bb["server"]):
        if not (key == variable or key.startswith(variable + ".")):
            cmp(where, f"server.{key}", a, b)
    checked.append(f"{where}:server (all but {variable})")
    return checked, bad


def arm_figures(raw: dict) -> dict[object, dict]:
    """Per point: the mean over runs of each run's figures, plus a fixture-wide 'all'."""
    by_point: dict[object, list[dict]] = {}
    for p in raw["points"]:
        by_point.setdefault(p["point"], []).append(point_summary(p))
    out = {}
    for point, runs in by_point.items():
        out[point] = {m: _mean([r[m] for r in runs]) for m in METRICS}
        out[point]["errors"] = sum(r["errors"] for r in runs)
    if raw["instrument"] == "fixture":
        recs = [r for p in raw["points"] for r in p["records"] if not r["warmup"]]
        out["all"] = {"decode_rate_p50": pct([decode_rate(r) for r in recs], 50),
                      "throughput": None, "ttft_p50": None, "errors": 0}
    return out


def _mean(values: list) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def delta_pct(control: float | None, candidate: float | None) -> float | None:
    if control in (None, 0) or candidate is None:
        return None
    return 100.0 * (candidate - control) / control


def rows_for_pair(pair: int, control: dict, candidate: dict) -> list[dict]:
    rows = []
    for inst in sorted(control["raw"]):
        fa, fb = arm_figures(control["raw"][inst]), arm_figures(candidate["raw"][inst])
        for point in fa:
            for m in METRICS:
                a, b = fa[point][m], fb[point][m]
                if a is None and b is None:
                    continue
                rows.append({"instrument": inst, "point": point, "pair": pair, "metric": m,
                             "control": a, "candidate": b, "delta_pct": delta_pct(a, b)})
    return rows


def compare(plan: dict, sessions: dict[tuple[int, str], dict]) -> dict:
    """sessions[(pair, arm)] = {"boot": ..., "raw": {...}}. Returns the comparison payload."""
    checked, bad = [], []
    for pair in range(1, plan["protocol"]["pairs"] + 1):
        c, b = validate_pair(pair, sessions[(pair, "control")], sessions[(pair, "candidate")],
                             plan["variable"])
        checked += c
        bad += b
    rows = []
    if not bad:
        for pair in range(1, plan["protocol"]["pairs"] + 1):
            rows += rows_for_pair(pair, sessions[(pair, "control")],
                                  sessions[(pair, "candidate")])
    return {"experiment": plan["name"], "verdict": "INVALID" if bad else "VALID",
            "variable": plan["variable"], "fields_checked": checked, "mismatches": bad,
            "rows": rows}
