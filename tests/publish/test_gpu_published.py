"""The published GPU runs, checked on a machine without a GPU: what every receipt and window
of them must carry, and that they audit here."""

import pytest

from knee.analyze import aa, inference, sampling
from knee.core import jsonio, rawfiles
from knee.instruments import instrument_names
from knee.plan import models
from knee.publish import audit
from tests.helpers import ROOT

WORKLOAD = ["ksched-h200", "aa-h200", "aa-h200-35b", "ksched-h200-35b",  # sampled, compressed
            "aa-h200-35b-pinned"]
CALIBRATION = "calib-h200-35b"  # sampled too, but every figure withheld (below)
ADJUSTED = "ksched-h200-35b-adj"  # the adjusted bar, 14 pairs over five leases (hosts)
FOLDERS = ["noise-h200", CALIBRATION, *WORKLOAD, ADJUSTED]
AA = ["aa-h200", "aa-h200-35b", "aa-h200-35b-pinned"]


def gpu_boots(root):
    """(plan, session id, boot receipt) of every session, each boot on an H200 with vLLM 0.26.0."""
    plan = jsonio.read(root / "plan.json", "plan")
    for s in plan["protocol"]["sessions"]:
        boot = jsonio.read(root / "receipts" / f"{s['id']}-boot.json", "boot")
        assert boot["hardware"]["nvml"][0]["name"] == "NVIDIA H200"
        assert boot["engine"]["packages"]["vllm"] == "0.26.0"
        yield plan, s["id"], boot


@pytest.mark.parametrize("name", FOLDERS)
def test_every_boot_names_its_gpu_and_vllm_and_every_window_carries_gpu_samples(name):
    root = ROOT / "results" / name
    for plan, sid, boot in gpu_boots(root):
        assert boot["model"]["weights"].startswith("none: the engine draws random weights")
        for inst in instrument_names(plan):
            raw = jsonio.read(rawfiles.stored(root / "raw" / sid, f"{inst}.json"), "raw")
            samples = raw["host"]["gpu_during"]["gpu0"]
            assert samples["samples"] > 0 and samples["sm_clock_mhz"]["median"] > 0


@pytest.mark.parametrize("name", AA)
def test_the_gpu_aa_reports_its_false_positives_and_mde(name):
    text = (ROOT / "results" / name / "README.md").read_text()
    assert "### A/A calibration" in text and "excludes zero" in text and "| MDE |" in text


@pytest.mark.parametrize("name", ["ksched-h200", "ksched-h200-35b"])
def test_the_cudagraph_override_is_reported_as_a_confound(name):
    comparison = jsonio.read(ROOT / "results" / name / "comparison" / "comparison.json",
                             "comparison")
    assert [d["arms"] for d in comparison["engine_differences"]] == [["candidate"]]
    assert "Overriding cudagraph_mode" in comparison["engine_differences"][0]["what"]
    assert "Engine-side difference beyond the variable" in \
        (ROOT / "results" / name / "README.md").read_text()


@pytest.mark.parametrize("name", FOLDERS)
def test_the_gpu_folders_audit_on_a_cpu_machine(name):
    problems, notes = audit.examine(ROOT / "results" / name)
    assert problems == []
    assert not [n for n in notes if n.startswith("not possible")], notes


def test_the_calibration_aa_sampled_the_host_speed_over_every_run_and_its_check_decided_nothing():
    """Every sweep and fixture run records the engine CPUs' speed over its own span and the
    sampler's series is kept. Each boot's receipt says its sampling check failed at T=0.9, but
    its records cannot decide it: the engine keyed the 20 likeliest by text and this model's
    byte pieces collide, so almost every position lost entries. The analysis judges the records
    again: undecided, nothing withheld, every bar figure reported, and the README says so."""
    root = ROOT / "results" / CALIBRATION
    engine_cpus = {f"cpu{c}" for c in range(8)}
    for plan, sid, boot in gpu_boots(root):
        [recorded] = boot["sampling_check"]
        assert recorded["temperature"] == 0.9 and recorded["passed"] is False
        [check] = sampling.verdicts(boot)
        assert check["passed"] is None and "cannot decide" in check["why"]
        assert sum(len(t) < 20 for r in recorded["records"] for t in r["top_logprobs"]) > 150
        for inst in instrument_names(plan):
            raw = jsonio.read(rawfiles.stored(root / "raw" / sid, f"{inst}.json"), "raw")
            assert all(engine_cpus <= set(p["cpu_speed"]) for p in raw["points"])
            series = raw["host"]["cpu_speed_series"]
            assert len(series["t_ms"]) > 20 and len(series["speed"]) == 16
    verdict = jsonio.read(root / "comparison" / "bar.json", "bar")
    assert verdict["verdict"] == "INCONCLUSIVE"
    assert all(r["per_pair"] for r in verdict["rules"])
    text = (root / "README.md").read_text()
    assert "sampling at temperature 0.9 is unchecked" in text and "Nothing sampled" not in text


def test_the_adjusted_experiment_ran_its_planned_pairs_over_five_hosts_as_measured():
    """Every session of the plan, each host a lease of its own; no rule's balance check shows
    the arms' host speed within the registered ±2 %, so the adjustment is withheld from every
    rule: C8 and C16 FAIL as measured, single-stream parity is INCONCLUSIVE, and no verdict is
    fragile; the README sets the planner's predicted MDE beside the realized one."""
    root = ROOT / "results" / ADJUSTED
    boots = list(gpu_boots(root))
    assert len(boots) == 2 * boots[0][0]["protocol"]["pairs"] == 28
    assert len({boot["hardware"]["boot_id"] for _, _, boot in boots}) == 5
    verdict = jsonio.read(root / "comparison" / "bar.json", "bar")
    assert verdict["verdict"] == "FAIL" and verdict["pairs"] == 14
    assert [r["verdict"] for r in verdict["rules"]] == ["INCONCLUSIVE", "FAIL", "FAIL"]
    for rule in verdict["rules"]:
        assert not rule["adjustment"]["applied"] and "unadjusted" not in rule, rule["rule"]
        # the change moves the covariate: the arms' speed difference in the single-stream
        # window less that in the C8 runs is +11 %, where a host state common to both is zero
        assert "single-stream parity less that in the span of C8 gain is +11.05% [+4.35, " \
            "+18.18]: not shown inside ±2%" in rule["adjustment"]["reason"]
        lo, hi = rule["adjustment"]["balance"]["interval"]  # nor is any rule's balance shown
        assert lo < -2 or hi > 2
        assert not rule["robustness"]["fragile"], rule["rule"]
    single = verdict["rules"][0]
    assert single["rule"] == "single-stream parity" and single["interval"][0] < -1.5 < \
        single["interval"][1]
    text = (root / "README.md").read_text()
    assert "| MDE predicted | MDE realized |" in text and "Measured on 5 hosts" in text
    # the fourth lease's host went back between 12-candidate and 12-control
    assert verdict["hosts"]["split_pairs"] == [{"pair": 12, "hosts": [
        "b9099173-7b1f-4fde-a34d-375af11f2a67", "83708f99-e0e5-4a3f-af1e-ac4b63ec6cfd"]}]
    alone = verdict["hosts"]["rules"][0]["without_split_pairs"]
    assert alone["pairs"] == 13 and alone["verdict"] == "INCONCLUSIVE"
    assert "rests on pair 12" not in text


@pytest.mark.parametrize("name", [*WORKLOAD, CALIBRATION])
def test_the_gpu_folders_store_raw_files_compressed_and_stay_small(name):
    root = ROOT / "results" / name
    raw = [p for p in (root / "raw").glob("*/*") if ".metrics." not in p.name]
    assert raw and all(p.name.endswith(".gz") for p in raw), raw
    assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) < 10_000_000


@pytest.mark.parametrize("name", WORKLOAD)
def test_the_gpu_workload_accepts_drafts_as_a_real_drafter_does(name):
    """Sampled at instruments.sampling's temperature from a model whose logits are scaled,
    the control arm's k=5 drafts are accepted less at every position: position 1 between
    0.5 and 0.8 (the write-up's drafter: 0.72, 0.46, 0.30, 0.17)."""
    windows = jsonio.read(ROOT / "results" / name / "comparison" / "acceptance.json",
                          "acceptance")["windows"]
    sweeps = [w for w in windows if w["instrument"] in ("sweep", "fixture")
              and w["session"].endswith("-control")]
    plan = jsonio.read(ROOT / "results" / name / "plan.json", "plan")
    controls = [s for s in plan["protocol"]["sessions"] if s["arm"] == "control"]
    assert len(sweeps) == 2 * len(controls) >= 4
    for w in sweeps:
        rates = w["per_position_rate"]
        assert 0.5 <= rates[0] <= 0.8, (w["session"], rates)
        assert rates[0] > rates[1] > rates[2], (w["session"], rates)


def mde_at_8_pairs(name: str) -> dict[str, float]:
    """Per bar rule of an A/A folder: the MDE at 8 pairs from its boots' measured spread."""
    root = ROOT / "results" / name
    plan = jsonio.read(root / "plan.json", "plan")
    result = aa.calibrate([root], plan["bar"]["rules"], plan["bar"]["alpha"])
    out = {}
    for r in result["bar"]["rules"]:
        sd = inference.effect([inference.log_ratio(p["control"], p["candidate"])
                               for p in r["per_pair"]]).sd
        out[r["rule"]] = aa.mde_by_pairs(r, sd, plan["bar"]["alpha"])[8]
    return out


def test_a_step_the_gpu_paces_resolves_smaller_effects_than_one_the_host_cpu_paces():
    """The 35B shape's A/A against the 8B shape's (README, On a GPU host): at 8 pairs its MDE
    is lower at every bar figure and close to the write-up's 1.5 % margin."""
    small, large = mde_at_8_pairs("aa-h200"), mde_at_8_pairs("aa-h200-35b")
    assert small.keys() == large.keys() and len(large) == 3
    for rule, mde in large.items():
        assert mde < small[rule] and mde < 1.6, (rule, mde, small[rule])


@pytest.mark.parametrize("name", WORKLOAD)
def test_a_sampled_workload_says_how_it_sampled(name):
    plan = jsonio.read(ROOT / "results" / name / "plan.json", "plan")
    temperature = plan["instruments"]["sampling"]["temperature"]
    text = (ROOT / "results" / name / "README.md").read_text()
    assert f"sampled (temperature {temperature}), request i of a window seeded" in text
    assert "temperature 0;" not in text


def test_a_greedy_workload_says_temperature_0():
    from knee.publish import readme
    plan = jsonio.read(ROOT / "results" / "ksched-cpu" / "plan.json", "plan")
    assert "sampling" not in plan["instruments"]
    assert readme.sampling_words(plan) == "temperature 0"
    sampled = {**plan, "instruments": {**plan["instruments"], "sampling": {"temperature": 1.2,
                                                                           "top_k": 5}}}
    assert readme.sampling_words(sampled).startswith("sampled (temperature 1.2, top_k 5)")
    text = (ROOT / "results" / "ksched-cpu" / "README.md").read_text()
    assert "ignore_eos, temperature 0;" in text


REAL = ["k7v4-h200", "k7v4-h200-verify"]  # SmolLM2-135M-Instruct from its wheel, bfloat16


@pytest.mark.parametrize("name", REAL)
def test_the_real_model_gpu_folders_name_the_packaged_model_and_audit_here(name):
    root = ROOT / "results" / name
    for _, _, boot in gpu_boots(root):
        made = boot["model"]["packaged"]
        # converted on the GPU host by its own transformers: the same bytes as here
        assert made["safetensors_sha256"] == models.PACKAGED[made["package"]].safetensors_sha256
        assert made["license"] == "Apache-2.0"
        assert "--dtype" in boot["argv"] and boot["argv"][boot["argv"].index("--dtype") + 1] \
            == "bfloat16"
    problems, notes = audit.examine(root)
    assert problems == [] and not [n for n in notes if n.startswith("not possible")], notes


@pytest.mark.parametrize("name", REAL)
def test_the_gpu_engine_samples_what_it_is_asked_at_every_boot(name):
    """vLLM 0.26.0 on the H200 passes the sampling check at T=0.8 under k=7, 6 and 4 (the
    CPU engine fails it: vLLM #55005), and nothing sampled there is withheld."""
    root = ROOT / "results" / name
    for _, _, boot in gpu_boots(root):
        [check] = boot["sampling_check"]
        assert check["temperature"] == 0.8 and check["passed"] and check["repeatable"]
        assert abs(check["z"]) < check["z_limit"]
    comparison = jsonio.read(root / "comparison" / "comparison.json", "comparison")
    assert not comparison.get("sampling_withheld")


def test_acceptance_on_the_real_model_differs_by_class_and_falls_with_position():
    """The fixture's classes bracketed by scrapes of their own, k=7: tool JSON and shell accept
    more than code and prose in every control boot, and position 1 accepts at least position 7."""
    windows = jsonio.read(ROOT / "results" / "k7v4-h200" / "comparison" / "acceptance.json",
                          "acceptance")["windows"]
    fixtures = [w for w in windows if w["instrument"] == "fixture"
                and w["session"].endswith("-control")]
    assert len(fixtures) == 2
    for w in fixtures:
        rate = {t["point"]: t["acceptance_rate"] for t in w["temperatures"]}
        assert min(rate["tool_json"], rate["shell"]) > max(rate["code"], rate["prose"]), rate
        for t in w["temperatures"]:
            assert len(t["per_position_rate"]) == 7
            assert t["per_position_rate"][0] >= t["per_position_rate"][-1], t
