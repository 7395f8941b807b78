
import pytest
import yaml

from knee.core.errors import KneeError
from knee.plan import config, planfile, summary
from tests.helpers import ROOT, run_knee


def test_default_config_plans_counterbalanced_sessions(default_config):
    plan = config.make_plan(config.validate(default_config))
    ids = [s["id"] for s in plan["protocol"]["sessions"]]
    assert ids == ["1-control", "1-candidate", "2-candidate", "2-control", "3-control",
                   "3-candidate"]
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
    assert [s["id"] for s in plan["protocol"]["sessions"]][2] == "2-candidate"


def test_cli_validate_config_fails_fast_with_key_path(tmp_path, default_config):
    default_config["protocol"]["pairs"] = 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(default_config))
    r = run_knee("validate-config", str(bad), timeout=60)
    assert r.returncode == 1
    assert "protocol.pairs: 0 is less than the minimum of 1" in r.stderr


def test_bar_rule_on_an_unmeasured_point_is_refused(default_config):
    default_config["instruments"]["sweep"]["concurrency"] = [1, 4]
    with pytest.raises(KneeError, match=r"bar.rules\[1\].point: 8 is not measured by sweep"):
        config.make_plan(config.validate(default_config), "x.yaml")


def order_of(default_config, order, seed=0, pairs=6):
    default_config["protocol"].update(order=order, seed=seed, pairs=pairs)
    plan = config.make_plan(config.validate(default_config))
    return [s["id"] for s in plan["protocol"]["sessions"]], plan["bar_sha256"]


def test_fixed_order_runs_every_pair_the_same_way(default_config):
    ids, _ = order_of(default_config, ["candidate", "control"], pairs=2)
    assert ids == ["1-candidate", "1-control", "2-candidate", "2-control"]


def test_randomized_order_is_seeded_and_registered_in_the_bar_hash(default_config):
    firsts = set()
    hashes = set()
    for seed in range(8):
        ids, sha = order_of(default_config, "randomized", seed)
        assert ids == order_of(default_config, "randomized", seed)[0]  # the same draw again
        assert sorted(ids) == sorted(f"{p}-{a}" for p in range(1, 7)
                                     for a in ("control", "candidate"))
        firsts.add(tuple(ids[i].split("-")[1] for i in range(0, 12, 2)))
        hashes.add(sha)
    assert len(firsts) > 1  # the draw does change the order
    assert len(hashes) == len(firsts)  # a different realized order is a different registration


def test_bar_hash_covers_alpha(default_config):
    a = config.make_plan(config.validate(default_config))["bar_sha256"]
    default_config["bar"]["alpha"] = 0.025
    assert config.make_plan(config.validate(default_config))["bar_sha256"] != a


def test_aa_config_plans_identical_arms():
    plan = config.make_plan(config.load(ROOT / "config" / "aa-cpu.yaml"), "config/aa-cpu.yaml")
    assert plan["variable"] == "none" and plan["arms"]["control"] == plan["arms"]["candidate"]
    assert "A/A experiment" in summary.describe(plan)


def test_aa_arms_that_differ_are_refused(default_config):
    default_config["variable"] = "none"
    with pytest.raises(KneeError, match=r"variable none .*must be identical.*\n  speculative_config"
                                        r".num_speculative_tokens_per_batch_size"):
        config.make_plan(config.validate(default_config))


def test_removed_bar_pairs_key_is_refused_with_its_replacement(default_config):
    default_config["bar"]["pairs"] = "any"
    with pytest.raises(KneeError, match=r"bar.pairs.*alpha"):
        config.validate(default_config, "old.yaml")


@pytest.mark.parametrize(("key", "value", "message"), [
    ("pairs", {"min": 2}, "protocol.pairs: 'max' is a required property"),
    ("order", "abba", "protocol.order: 'abba' is not one of ['counterbalanced', 'randomized', "
                      "'simultaneous', 'interleaved']"),
    ("order", ["control", "x"], "protocol.order[1]: 'x' is not one of ['control', 'candidate']"),
])
def test_a_value_of_several_forms_is_explained_by_the_form_it_has(default_config, key, value,
                                                                   message):
    default_config["protocol"][key] = value
    with pytest.raises(KneeError) as e:
        config.validate(default_config, "c.yaml")
    assert f"c.yaml: {message}" in str(e.value)


def test_a_measured_folder_without_its_plan_is_never_planned_again(tmp_path):
    """Boot receipts but no plan.json: the sessions were measured under a plan that is gone;
    knee refuses to make one over them (by the workflow's check and by write_plan alike)."""
    import pytest

    from knee.core.errors import KneeError

    root = tmp_path / "ksched-cpu"
    (root / "receipts").mkdir(parents=True)
    (root / "receipts" / "1-control-boot.json").write_text("{}")
    _checked, plan = config.plan_config(config.load_raw(ROOT / "config" / "config.yaml"),
                                       "c.yaml", ROOT)
    with pytest.raises(KneeError, match=r"plan.json: missing from a folder whose sessions have "
                                        r"booted"):
        planfile.check_bound(plan, root, "c.yaml")
    with pytest.raises(KneeError, match=r"knee never plans a measured experiment again"):
        planfile.write_plan(root / "plan.json", plan)
    assert not (root / "plan.json").exists()


def test_two_lists_of_experiments_never_share_a_campaign_page(tmp_path):
    """[a-b, c] and [a, b-c] join to the same folder name: the page already there for the one
    list is refused to the other, never overwritten."""
    from knee.plan import configfile

    folder = tmp_path / configfile.campaign_folder(["a-b", "c"])
    assert folder.name == configfile.campaign_folder(["a", "b-c"])
    folder.mkdir()
    (folder / "README.md").write_text("# Campaign: a-b, c\n\nthe table\n")
    configfile.check_campaign_page(str(folder), ["a-b", "c"])  # its own list: re-rendered
    with pytest.raises(KneeError, match=r"the campaign page of other experiments \('# Campaign: "
                                        r"a-b, c'\) has the folder these \(a, b-c\) would write"):
        configfile.check_campaign_page(str(folder), ["a", "b-c"])


def test_merged_config_files_are_bounded_before_any_is_read(tmp_path):
    from knee.plan import configfile

    many = [str(ROOT / "config" / "config.yaml")] * (configfile.MAX_FILES + 1)
    with pytest.raises(KneeError, match=r"--configfile: 17 files; an experiment is merged from "
                                        r"at most 16"):
        configfile.load_all(many)
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * (configfile.MAX_BYTES // 2) + "\nname: a\n")
    with pytest.raises(KneeError, match=r"bytes together is more than a config's limit"):
        configfile.load_all([big, big, big])
