"""The comparison of a simultaneous run says, per pair and window, how far apart the arms'
windows began and how much of them overlapped, and which set each arm had."""

from knee.analyze import together


def plan(pairs: int = 2) -> dict:
    sessions = []
    for pair in range(1, pairs + 1):
        for arm, other, k in (("control", "candidate", pair % 2), ("candidate", "control",
                                                                   (pair + 1) % 2)):
            sessions.append({"id": f"{pair}-{arm}", "pair": pair, "arm": arm,
                             "together": f"{pair}-{other}", "set": 2 - k, "cpus": [k]})
    return {"protocol": {"order": "simultaneous", "sessions": sessions}}


def window(began: float, ended: float) -> dict:
    return {"together": {"partner": "x", "start": began, "waited_s": 0.1, "began": began,
                         "ended": ended}}


def test_each_pair_window_is_measured_for_skew_and_overlap():
    sessions = {(1, "control"): {"raw": {"sweep": window(100.0, 110.0)}},
                (1, "candidate"): {"raw": {"sweep": window(100.002, 112.002)}},
                (2, "control"): {"raw": {"sweep": window(200.0, 210.0)}},
                (2, "candidate"): {"raw": {"sweep": window(200.0, 205.0)}}}
    got = together.section(plan(), sessions)["simultaneous"]
    assert [(w["pair"], w["sets"], w["skew_s"], w["overlap"]) for w in got["windows"]] == [
        (1, {"control": 1, "candidate": 2}, 0.002, 0.8332),
        (2, {"control": 2, "candidate": 1}, 0.0, 0.5)]
    assert got["max_skew_s"] == 0.002 and got["min_overlap"] == 0.5


def test_a_sequential_plan_has_no_such_section():
    sequential = {"protocol": {"order": "counterbalanced", "sessions": [
        {"id": "1-control", "pair": 1, "arm": "control", "after": None}]}}
    assert together.section(sequential, {}) == {}
