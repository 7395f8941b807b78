"""Simultaneous order in the plan: both arms of a pair at once on two disjoint sets that swap
between pairs, and every config whose arms do not fit the host twice refused with the
arithmetic, before anything boots."""

import pytest

from knee.core.errors import KneeError
from knee.plan import config, configfile, places, summary
from tests.helpers import ROOT


def simultaneous(name: str = "config.yaml", **runtime) -> dict:
    cfg = configfile.load(ROOT / "config" / name)
    cfg["protocol"]["order"] = "simultaneous"
    cfg["runtime"].pop("engine_cpus", None)
    cfg["runtime"].update({"arm_cpus": [[0], [1]], **runtime})
    return cfg


def plan_of(cfg: dict) -> dict:
    return config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")


def test_each_pair_boots_both_arms_on_sets_that_swap_between_pairs():
    plan = plan_of(simultaneous())
    got = [(s["id"], s["after"], s["together"], s["set"], s["cpus"])
           for s in plan["protocol"]["sessions"]]
    assert got == [("1-control", None, "1-candidate", 1, [0]),
                   ("1-candidate", None, "1-control", 2, [1]),
                   ("2-control", "1-control", "2-candidate", 2, [1]),
                   ("2-candidate", "1-candidate", "2-control", 1, [0]),
                   ("3-control", "2-control", "3-candidate", 1, [0]),
                   ("3-candidate", "2-candidate", "3-control", 2, [1])]
    assert "1-control (CPUs [0]) + 1-candidate (CPUs [1]) -> 2-control (CPUs [1])" in \
        summary.describe(plan)


def test_the_gpus_are_cut_in_two_halves_one_per_arm():
    cfg = simultaneous("ksched-h200.yaml", gpus=[0, 1, 2, 3], arm_cpus=[[0, 1], [2, 3]])
    cfg["server"]["args"]["tensor-parallel-size"] = 2
    sessions = plan_of(cfg)["protocol"]["sessions"]
    assert [(s["id"], s["gpus"], s["cpus"]) for s in sessions[:4]] == [
        ("1-control", [0, 1], [0, 1]), ("1-candidate", [2, 3], [2, 3]),
        ("2-control", [2, 3], [2, 3]), ("2-candidate", [0, 1], [0, 1])]


@pytest.mark.parametrize(("gpus", "tp", "said"), [
    ([0, 1, 2], 2, r"arms.control: the engine spans 2 GPU\(s\) \(tensor-parallel-size 2\); "
                   r"simultaneous order boots both arms at once on disjoint sets, 2 × 2 = 4 "
                   r"GPU\(s\), but runtime.gpus names 3 \(\[0, 1, 2\]\)"),
    ([0, 1], 2, r"2 × 2 = 4 GPU\(s\), but runtime.gpus names 2"),
    ([0, 0], 1, r"runtime.gpus: \[0, 0\]: GPU 0 is named twice"),
    ("all", 1, r"runtime.gpus: 'all': in simultaneous order each arm has GPUs of its own"),
])
def test_gpus_that_do_not_fit_both_arms_are_refused_with_the_arithmetic(gpus, tp, said):
    cfg = simultaneous("ksched-h200.yaml", gpus=gpus, arm_cpus=[[0, 1], [2, 3]])
    cfg["server"]["args"]["tensor-parallel-size"] = tp
    with pytest.raises(KneeError, match=said):
        plan_of(cfg)


@pytest.mark.parametrize(("runtime", "said"), [
    ({"arm_cpus": [[0, 1], [1, 2]]}, r"runtime.arm_cpus: \[\[0, 1\], \[1, 2\]\]: CPU 1 is in "
                                     r"both sets"),
    ({"arm_cpus": [[0, 1], [2]]}, r"the sets have 2 and 1 CPUs: the arms swap sets"),
    ({"engine_cpus": [0]}, r"runtime.engine_cpus: \[0\]: in simultaneous order each arm has a "
                           r"CPU set of its own .* runtime.arm_cpus instead"),
])
def test_cpu_sets_that_are_not_two_of_the_same_size_apart_are_refused(runtime, said):
    with pytest.raises(KneeError, match=said):
        plan_of(simultaneous(**runtime))


def test_the_cpu_sets_are_required_and_knee_must_boot_the_servers():
    cfg = simultaneous()
    del cfg["runtime"]["arm_cpus"]
    with pytest.raises(KneeError, match=r"runtime.arm_cpus: missing: simultaneous order pins "):
        plan_of(cfg)
    external = simultaneous()
    external["runtime"] = {"kind": "external", "servers": {
        arm: {"url": f"http://127.0.0.1:{port}"} for arm, port in (("control", 8001),
                                                                   ("candidate", 8002))}}
    with pytest.raises(KneeError, match=r"runtime.kind 'external' boots nothing"):
        plan_of(external)


def test_sets_this_machine_cannot_hold_at_once_are_refused_before_a_boot(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1})
    cfg = config.validate(simultaneous(arm_cpus=[[0, 1], [2, 3]]), "x.yaml")
    with pytest.raises(KneeError, match=r"x.yaml: runtime.arm_cpus: the two arms run at once, "
                                        r"2 \+ 2 = 4 CPUs, but this machine lets knee use 2 "
                                        r"\(\[0, 1\]\)"):
        places.check_here(cfg, "x.yaml")
    cfg = config.validate(simultaneous(arm_cpus=[[0], [5]]), "x.yaml")
    with pytest.raises(KneeError, match=r"runtime.arm_cpus\[1\]\[0\]: CPU 5 is not one"):
        places.check_here(cfg, "x.yaml")


def test_sequential_orders_plan_as_before():
    plan = plan_of(configfile.load(ROOT / "config" / "config.yaml"))
    assert all("together" not in s and "cpus" not in s for s in plan["protocol"]["sessions"])


def interleaved(name: str = "qwen-draft-h200.yaml", share: float | None = 0.45) -> dict:
    cfg = configfile.load(ROOT / "config" / name)
    cfg["protocol"]["order"] = "interleaved"
    cfg["runtime"].pop("engine_cpus", None)
    cfg["runtime"]["arm_cpus"] = [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15]]
    if share is not None:
        cfg["server"]["args"]["gpu-memory-utilization"] = share
    return cfg


def test_interleaved_engines_share_the_gpus_on_cpu_sets_that_swap_between_pairs():
    sessions = plan_of(interleaved())["protocol"]["sessions"]
    assert [(s["id"], s["together"], s["set"], s["cpus"][0], "gpus" in s)
            for s in sessions[:4]] == [("1-control", "1-candidate", 1, 0, False),
                                       ("1-candidate", "1-control", 2, 8, False),
                                       ("2-control", "2-candidate", 2, 8, False),
                                       ("2-candidate", "2-control", 1, 0, False)]


@pytest.mark.parametrize(("share", "said"), [
    (None, r"claim 0.9 \(control, vLLM default\) \+ 0.9 \(candidate, vLLM default\) = 1.8 of "
           r"each GPU's memory, more than 0.95"),
    (0.5, r"claim 0.5 \(control\) \+ 0.5 \(candidate\) = 1 of each GPU's memory, more than "
          r"0.95 \(the rest is each process's CUDA context\): set gpu-memory-utilization to at "
          r"most 0.475"),
])
def test_engines_that_do_not_fit_the_gpus_twice_are_refused_with_the_arithmetic(share, said):
    with pytest.raises(KneeError, match=r"x.yaml: protocol.order: interleaved keeps both arms' "
                                        r"engines on the same GPUs at once, and their "
                                        r"server.args.gpu-memory-utilization " + said):
        plan_of(interleaved(share=share))


def test_every_block_is_abba_and_either_arm_may_open_it():
    from knee.plan.together import first_arm, position

    firsts = [first_arm(7, 3, "fixture", b) for b in range(400)]
    assert 160 < firsts.count("control") < 240  # a fair draw, about half each
    assert firsts == [first_arm(7, 3, "fixture", b) for b in range(400)]  # registered: fixed
    assert firsts != [first_arm(8, 3, "fixture", b) for b in range(400)]  # the seed draws them
    for b in range(50):
        order = []
        for unit in (2 * b, 2 * b + 1):
            pos = {arm: position(7, 3, "fixture", unit, arm) for arm in ("control", "candidate")}
            assert sorted(pos.values()) == [0, 1]  # one arm first, the other second
            order += sorted(pos, key=pos.get)
        assert order[0] == firsts[b] and order[0] == order[3] and order[1] == order[2]


def test_interleaved_arms_may_share_the_cpus_and_boot_in_alternating_order():
    cfg = interleaved()
    del cfg["runtime"]["arm_cpus"]
    cfg["runtime"]["engine_cpus"] = [0, 1, 2, 3, 4, 5, 6, 7]
    plan = plan_of(cfg)
    assert [(s["id"], s["set"], "cpus" in s) for s in plan["protocol"]["sessions"][:4]] == [
        ("1-control", 1, False), ("1-candidate", 2, False),
        ("2-control", 2, False), ("2-candidate", 1, False)]
    assert "1-control + 1-candidate -> 2-control + 2-candidate" in summary.describe(plan)
    cfg["runtime"]["arm_cpus"] = [[0, 1], [2, 3]]  # sets of their own, and one for both
    with pytest.raises(KneeError, match=r"runtime.engine_cpus: \[0, 1, 2, 3, 4, 5, 6, 7\]: in "
                                        r"interleaved order with runtime.arm_cpus each arm"):
        plan_of(cfg)
