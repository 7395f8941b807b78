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


def turns(arm: str, seed: int, pair: int, units: int, t0: float, swap: int | None = None,
          overlap: float = 0.0) -> list[list]:
    """`arm`'s turns as the registered draws order them, each unit 1 s a turn (unit k's two
    turns in [t0 + 2k, t0 + 2k + 2)); `swap`: this arm goes at the other place at that unit;
    `overlap`: each turn runs that much into the next."""
    from knee.plan.together import position

    out = []
    for k in range(units):
        pos = position(seed, pair, "fixture", k, arm)
        pos = 1 - pos if k == swap else pos
        began = t0 + 2 * k + pos
        out.append([k, pos, began, began + 1 + overlap])
    return out


def interleaved_run(arm_cpus: list | None = None, **candidate) -> dict:
    p = plan(1)
    p["protocol"].update(order="interleaved", seed=5)
    p["runtime"] = {"arm_cpus": arm_cpus} if arm_cpus else {}
    raw = {arm: {"raw": {"fixture": {"together": {
        "partner": "x", "start": 0.0, "waited_s": 0.0, "began": 0.0, "ended": 0.0,
        "turns": turns(arm, 5, 1, 8, 1000.0, **(candidate if arm == "candidate" else {}))}}}}
        for arm in ("control", "candidate")}
    return together.section(p, {(1, a): s for a, s in raw.items()})["interleaved"]


def test_interleaved_turns_are_checked_against_the_registered_draws():
    got = interleaved_run()
    assert got["as_registered"] and got["max_concurrent_s"] == 0
    assert got["windows"][0]["units"] == {"control": 8, "candidate": 8}
    assert got["median_handoff_s"] == 0  # each turn began as the other's ended
    swapped = interleaved_run(swap=3)  # the candidate went at the control's place at unit 3
    assert not swapped["as_registered"] and swapped["max_concurrent_s"] == 1.0
    ran_on = interleaved_run(overlap=0.25)  # the candidate's turns ran into the control's
    assert ran_on["as_registered"] and 1.0 < ran_on["max_concurrent_s"] < 4.0


def test_the_interleaved_method_names_the_cpu_layout_the_plan_had():
    assert "on the same CPUs;" in interleaved_run()["method"]
    own = interleaved_run(arm_cpus=[[0, 1], [2, 3]])["method"]
    assert "each on its own CPU set (swapped between pairs);" in own
    assert "same CPUs" not in own


def test_turns_that_broke_the_design_are_caveats_of_the_readme():
    from knee.publish.together import turn_caveats

    assert turn_caveats(interleaved_run()) == []
    said = " ".join(turn_caveats(interleaved_run(swap=3)))
    assert "did not take their turns as the plan drew them in 1 window(s) (pair 1 fixture)" \
        in said
    assert "Both arms sent at once for up to 1.000 s" in said
