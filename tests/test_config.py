import subprocess
import sys

import pytest
import yaml

from knee import config
from knee.jsonio import KneeError
from tests.conftest import ROOT


def test_default_config_plans_four_sessions_in_protocol_order(default_config):
    plan = config.make_plan(config.validate(default_config))
    ids = [s["id"] for s in plan["protocol"]["sessions"]]
    assert ids == ["1-control", "1-candidate", "2-control", "2-candidate"]
    assert [s["after"] for s in plan["protocol"]["sessions"]] == [None, *ids[:-1]]
    cand = plan["arms"]["candidate"]["speculative_config"]
    assert cand["num_speculative_tokens_per_batch_size"] == [[1, 2, 5], [3, 16, 1]]
    assert "num_speculative_tokens_per_batch_size" not in plan["arms"]["control"][
        "speculative_config"]


def test_bad_value_names_key_path_and_reason(default_config):
    default_config["instruments"]["sweep"]["concurrency"][0] = 0
    with pytest.raises(KneeError) as e:
        config.validate(default_config, "my.yaml")
    msg = "my.yaml: instruments.sweep.concurrency[0]: 0 is less than the minimum of 1"
    assert msg in str(e.value)


def test_unknown_key_is_refused(default_config):
    default_config["instruments"]["sweep"]["concurency"] = [1]
    with pytest.raises(KneeError, match="concurency"):
        config.validate(default_config)


def test_defaults_are_filled(default_config):
    del default_config["runtime"]["boot_timeout_s"]
    assert config.validate(default_config)["runtime"]["boot_timeout_s"] == 600


def test_arms_differing_outside_the_variable_are_refused(default_config):
    default_config["arms"]["candidate"]["args"] = {"max-num-seqs": 8}
    cfg = config.validate(default_config)
    with pytest.raises(KneeError, match=r"args.max-num-seqs: control=16 candidate=8"):
        config.make_plan(cfg)


def test_arms_not_differing_in_the_variable_are_refused(default_config):
    default_config["arms"]["candidate"] = {}
    with pytest.raises(KneeError, match="do not differ in the declared variable"):
        config.make_plan(config.validate(default_config))


def test_bar_hash_changes_with_the_bar(default_config):
    a = config.make_plan(config.validate(default_config))
    default_config["bar"]["rules"][1]["min_gain_pct"] = 10
    b = config.make_plan(config.validate(default_config))
    assert a["bar_sha256"] != b["bar_sha256"]
    assert a["arms"] == b["arms"]


def test_gpu_experiment_config_validates_and_plans():
    cfg = config.load(ROOT / "config" / "ksched.yaml")
    plan = config.make_plan(cfg, "config/ksched.yaml")
    assert plan["runtime"]["kind"] == "docker"
    assert len(plan["instruments"]["sweep"]["concurrency"]) == 6
    assert plan["protocol"]["pairs"] == 2


def test_cli_validate_config_fails_fast_with_key_path(tmp_path, default_config):
    default_config["protocol"]["pairs"] = 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(default_config))
    r = subprocess.run([sys.executable, "-m", "knee", "validate-config", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "protocol.pairs: 0 is less than the minimum of 1" in r.stderr


def test_bar_rule_on_an_unmeasured_point_is_refused(default_config):
    default_config["instruments"]["sweep"]["concurrency"] = [1, 4]
    with pytest.raises(KneeError, match=r"bar.rules\[1\].point: 8 is not measured by sweep"):
        config.make_plan(config.validate(default_config), "x.yaml")
