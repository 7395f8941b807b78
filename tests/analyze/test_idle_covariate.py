"""bar.adjust.covariate idle_speed: the host speed each boot measures with its engine booted and
idle, before its first window, a covariate the change cannot move. Measured by the real sampler;
the comparison, the bar and the calibration read it from the boot receipts; the plan refuses it
where a partner would run during the probe, and a calibration of the other covariate; and a
simulation of known truth shows why it exists: a change that moves the in-window speed biases
the host_speed adjustment (or has it withheld), and leaves the idle one calibrated."""

import copy
import math
import os
import random
import statistics

import pytest

from knee.analyze import bar, compare, inference
from knee.analyze.adjust import calibration, covariate
from knee.analyze.folder import load_boots, load_sessions
from knee.core import jsonio
from knee.core.errors import KneeError
from knee.measure.host import speed as hostspeed
from knee.plan import config, configfile
from tests.helpers import ROOT

AA = ROOT / "results" / "aa-h200-35b"
PUBLISHED = ROOT / "config" / "calibration" / "h200-35b.json"


def test_the_idle_probe_samples_every_cpu_it_is_given_for_its_seconds():
    cpus = sorted(os.sched_getaffinity(0))
    got = hostspeed.idle_probe(cpus, 0.6)
    assert 0.6 <= got["seconds"] < 2.0
    assert sorted(got["cpu_speed"]) == sorted(f"cpu{c}" for c in cpus)
    assert all(s["median"] > 0 and s["samples"] >= 2 for s in got["cpu_speed"].values())


def with_idle(sessions: dict, speed_of) -> dict:
    """The sessions with an idle probe in every boot receipt: `speed_of(pair, arm)` on
    every CPU the window sampled."""
    out = copy.deepcopy(sessions)
    for (pair, arm), s in out.items():
        cpus = s["raw"]["fixture"]["host"]["cpu_speed_during"]
        s["boot"]["idle_speed"] = {"seconds": 5.0, "cpu_speed": {
            c: {"median": speed_of(pair, arm), "p10": 1, "p90": 1, "samples": 20}
            for c in cpus}}
    return out


def idle_plan(document: dict, tolerance: float = 2.0) -> dict:
    plan = jsonio.read(AA / "plan.json", "plan")
    plan["bar"]["adjust"] = {"covariate": "idle_speed", "calibration": "c.json",
                             "tolerance_pct": tolerance}
    plan["calibration"] = {"file": "c.json", "sha256": "0" * 64, "document": document}
    return plan


def test_every_figure_of_a_boot_is_adjusted_by_its_idle_probe_and_no_contrast_is_asked():
    """The idle probe is one per boot, before any window: every rule's covariate row is the
    boot's probe ('idle'), the arms' balance is read from it, and no arm contrast across
    instruments is computed (no instrument of the arm ran in the probe)."""
    doc = {**jsonio.read(PUBLISHED, "calibration"), "covariate": "idle_speed"}
    plan = idle_plan(doc)
    sessions = with_idle(load_sessions(plan, AA),
                         lambda pair, arm: 100.0 * (1 + 0.002 * pair) * (1.005 if arm ==
                                                                         "candidate" else 1))
    comparison = compare.compare(plan, sessions)
    cov = comparison["covariate"]
    assert cov["name"] == "idle_speed" and "idle probe" in cov["method"]
    assert {r["over"] for r in cov["rows"]} == {"idle"}
    assert all(r["candidate"] == pytest.approx(r["control"] * 1.005) for r in cov["rows"])
    verdict = bar.judge_plan(plan, comparison, load_boots(plan, AA))
    assert "covariate_contrast" not in verdict
    for rule in verdict["rules"]:
        adj = rule["adjustment"]
        assert adj["covariate"] == "idle_speed" and adj["applied"]
        assert adj["balance"]["estimate_pct"] == pytest.approx(0.5, abs=1e-3)
    jsonio.check("comparison", {"schema": "knee/comparison", "schema_version":
                                jsonio.schema_version("comparison"), **comparison}, "c")


def test_a_boot_without_its_idle_probe_is_judged_as_measured():
    doc = {**jsonio.read(PUBLISHED, "calibration"), "covariate": "idle_speed"}
    plan = idle_plan(doc)
    sessions = with_idle(load_sessions(plan, AA), lambda pair, arm: 100.0)
    del sessions[(2, "candidate")]["boot"]["idle_speed"]
    verdict = bar.judge_plan(plan, compare.compare(plan, sessions), load_boots(plan, AA))
    for rule in verdict["rules"]:
        assert not rule["adjustment"]["applied"]
        assert rule["adjustment"]["reason"].startswith(
            "no host speed was sampled for this figure in pair 2")


def test_the_calibration_fits_each_figure_on_the_boots_idle_probes(monkeypatch):
    """Each boot's figure against its own probe: the fit finds a slope planted in the
    probes (the figures as measured, each boot's probe made so that log figure = 0.5 log
    speed + a constant per arm), and a folder without probes is refused, naming it."""
    with pytest.raises(KneeError, match=r"--covariate idle_speed: aa-h200-35b: its boots took "
                                        r"no idle probe"):
        calibration.calibrate([AA], name="idle_speed")
    boots = calibration.folder_boots(AA)
    rule = next(r for r in boots[0]["plan"]["bar"]["rules"] if r["instrument"] == "fixture")
    for b in boots:
        y = calibration.boot_figure(b["raw"]["fixture"], rule, [])["y"]
        b["boot"]["idle_speed"] = {"seconds": 5, "cpu_speed": {"cpu0": {"median": math.exp(
            2 * y)}}}
    fitted = calibration.figure(rule, boots, "idle_speed")
    assert fitted["slope"] == pytest.approx(0.5, abs=1e-4) and fitted["speed_over"] == ["idle"]
    assert fitted["r2"] == pytest.approx(1.0, abs=1e-3)


def planned(tmp_path, covariate_name: str, calibrated: str, order: str = "counterbalanced"):
    doc = {**jsonio.read(PUBLISHED, "calibration"), "covariate": calibrated}
    path = tmp_path / "c.json"
    jsonio.write(path, "calibration", {k: v for k, v in doc.items()
                                       if k not in ("schema", "schema_version")})
    cfg = configfile.load(ROOT / "config" / "ksched-h200-35b.yaml")
    cfg["bar"]["adjust"] = {"covariate": covariate_name, "calibration": str(path)}
    cfg["protocol"]["order"] = order
    cfg["server"].setdefault("args", {})["gpu-memory-utilization"] = 0.45  # fits twice
    return config.make_plan(config.validate(cfg), "x")


def test_the_plan_holds_the_covariate_to_its_calibration_and_its_order(tmp_path):
    plan = planned(tmp_path, "idle_speed", "idle_speed")
    assert plan["bar"]["adjust"]["covariate"] == "idle_speed"
    with pytest.raises(KneeError, match=r"bar.adjust.calibration: .*calibrated for covariate "
                                        r"'host_speed', the bar adjusts for 'idle_speed'.*"
                                        r"knee calibrate --covariate idle_speed"):
        planned(tmp_path, "idle_speed", "host_speed")
    with pytest.raises(KneeError, match=r"bar.adjust.covariate: 'idle_speed' with "
                                        r"protocol.order 'interleaved': one arm's idle probe "
                                        r"runs while its partner boots or serves"):
        planned(tmp_path, "idle_speed", "idle_speed", order="interleaved")


# --- why: a change that moves the in-window speed, simulated with known truth -------------

HOST_SD, PROBE_SD, FIG_SD, SLOPE = 0.03, 0.003, 0.004, 0.3  # log units


def experiment(rng, pairs: int, truth: float, moved: float) -> tuple[list, list, list]:
    """Per pair: the figure's log ratio, and the arms' log speed ratio in the window and in the
    idle probe. The host's speed drifts per boot; the figure follows it by SLOPE; the change
    (candidate) makes the engine load its CPUs so that the window speed reads `moved` lower,
    which the figure does not follow; the probe, before any request, sees the host alone."""
    ys, window, idle = [], [], []
    for _ in range(pairs):
        host = [rng.gauss(0, HOST_SD) for _ in range(2)]
        ys.append(truth + SLOPE * (host[1] - host[0]) + rng.gauss(0, FIG_SD)
                  - rng.gauss(0, FIG_SD))
        window.append(host[1] - host[0] - moved + rng.gauss(0, PROBE_SD)
                      - rng.gauss(0, PROBE_SD))
        idle.append(host[1] - host[0] + rng.gauss(0, PROBE_SD) - rng.gauss(0, PROBE_SD))
    return ys, window, idle


@pytest.mark.parametrize("moved", [0.0, 0.01])
def test_the_idle_covariate_stays_calibrated_where_the_change_moves_the_window_speed(moved):
    """Truth zero, 8 pairs, 3000 experiments, the slope known. The idle adjustment excludes
    zero about 10 % of the time (90 % interval) whether or not the change moves the window's
    speed. The window adjustment, where the change lowers the window speed by 1 %, shifts
    every estimate by SLOPE x 1 % = +0.3 points and excludes zero about 4 times as often: the bias
    the balance check exists to catch, which the idle probe cannot have."""
    rng = random.Random(7)
    excl = {"idle": 0, "window": 0}
    shift = {"idle": [], "window": []}
    reps = 3000
    for _ in range(reps):
        ys, window, idle = experiment(rng, 8, 0.0, moved)
        for name, xs in (("idle", idle), ("window", window)):
            eff = inference.effect(covariate.adjusted(ys, xs, SLOPE))
            lo, hi = eff.bounds(0.90)
            excl[name] += lo > 0 or hi < 0
            shift[name].append(eff.mean)
    assert 0.08 <= excl["idle"] / reps <= 0.12
    assert statistics.fmean(shift["idle"]) == pytest.approx(0, abs=3e-4)
    assert statistics.fmean(shift["window"]) == pytest.approx(SLOPE * moved, abs=3e-4)
    if moved:
        assert excl["window"] / reps > 0.3  # 38 % at this seed: nearly 4 x the nominal 10 %
