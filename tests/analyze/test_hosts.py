"""A folder measured over several hosts: which pairs each host measured, each host's spread,
and a pair split across two hosts judged apart (knee.analyze.hosts, knee bar, the README)."""

import math

import pytest

from knee.analyze import bar, hosts
from knee.publish import readme

RULE = {"name": "single-stream parity", "instrument": "fixture", "metric": "decode_rate_p50",
        "point": "all", "within_pct": 1.5}


def folder(effects_pct, host_of_session):
    """A plan, a comparison whose pair p has the candidate effects_pct[p-1] % off the control,
    and boot receipts whose host is host_of_session(pair, arm) (None: no boot id)."""
    rows, boots = [], []
    for p, pct in enumerate(effects_pct, 1):
        rows.append({"pair": p, "instrument": "fixture", "metric": "decode_rate_p50",
                     "point": "all", "control": 100.0, "candidate": 100.0 * (1 + pct / 100),
                     "delta_pct": pct})
        for i, arm in enumerate(("control", "candidate")):
            host = host_of_session(p, arm)
            boots.append({"pair": p, "session": f"{p}-{arm}", "bar_sha256": "b",
                          "started_at": f"2026-12-05T10:{p:02d}:{i}0",
                          "hardware": {"boot_id": host} if host else {}})
    plan = {"bar": {"alpha": 0.05, "rules": [RULE]}, "bar_sha256": "b",
            "protocol": {"pairs": len(effects_pct)}}
    return plan, {"experiment": "t", "verdict": "VALID", "rows": rows}, boots


# pairs 1-6 near -2.5 %; pair 4's sessions on hosts A and B, and far off the others
EFFECTS = [-2.4, -2.6, -2.5, -9.0, -2.45, -2.55]


def on_two_hosts(pair, arm):
    return "A" if pair < 4 or (pair == 4 and arm == "control") else "B"


def test_one_host_or_no_boot_id_adds_nothing_to_the_bar():
    for where in (lambda p, a: "A", lambda p, a: None):
        plan, comparison, boots = folder(EFFECTS, where)
        assert "hosts" not in bar.judge_plan(plan, comparison, boots)


def test_each_host_names_the_pairs_it_measured_wholly_and_their_spread():
    plan, comparison, boots = folder(EFFECTS, on_two_hosts)
    section = bar.judge_plan(plan, comparison, boots)["hosts"]
    assert section["hosts"] == [{"boot_id": "A", "pairs": [1, 2, 3]},
                                {"boot_id": "B", "pairs": [5, 6]}]
    assert section["split_pairs"] == [{"pair": 4, "hosts": ["A", "B"]}]
    [rule] = section["rules"]
    on_a = [math.log(1 + e / 100) for e in EFFECTS[:3]]
    mean = sum(on_a) / 3
    sd_a = 100 * math.sqrt(sum((x - mean) ** 2 for x in on_a) / 2)
    assert rule["per_host"][0] == {"boot_id": "A", "pairs": 3, "sd_pct": pytest.approx(sd_a),
                                   "sd_used_pct": pytest.approx(sd_a)}
    assert rule["per_host"][1]["pairs"] == 2 and rule["adjusted"] is False


def test_a_verdict_that_rests_on_a_split_pair_is_judged_without_it_and_said_so():
    """Pair 4 (-9 %) widens the interval: with it the rule is undecided; without it the five
    pairs near -2.5 % rule parity out. The bar keeps the registered verdict, on every pair."""
    plan, comparison, boots = folder(EFFECTS, on_two_hosts)
    verdict = bar.judge_plan(plan, comparison, boots)
    assert verdict["rules"][0]["verdict"] == "INCONCLUSIVE" and verdict["pairs"] == 6
    alone = verdict["hosts"]["rules"][0]["without_split_pairs"]
    assert alone["pairs"] == 5 and alone["verdict"] == "FAIL"
    assert alone["interval"][1] < -1.5
    [said] = readme.split_caveats(verdict)
    assert said.startswith("single-stream parity: its INCONCLUSIVE rests on pair 4, whose "
                           "sessions ran on two hosts; without it the rule is FAIL")


def test_a_split_pair_that_changes_no_verdict_raises_no_caveat():
    plan, comparison, boots = folder([-2.4, -2.6, -2.5, -2.52, -2.45, -2.55], on_two_hosts)
    verdict = bar.judge_plan(plan, comparison, boots)
    assert verdict["hosts"]["rules"][0]["without_split_pairs"]["verdict"] == "FAIL"
    assert verdict["rules"][0]["verdict"] == "FAIL"
    assert readme.split_caveats(verdict) == []


def test_pairs_follow_the_order_the_sessions_ran():
    *_, boots = folder(EFFECTS, on_two_hosts)
    assert hosts.pair_hosts(list(reversed(boots)))[4] == ["A", "B"]
