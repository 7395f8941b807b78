"""knee recommend: the second reference write-up's numbers, the knee on known shapes, the step
model on known coefficients, refusals with their reasons, and the published recommendation
(recomputed by the audit, its verify.yaml a valid experiment)."""

import hashlib
import json
import os

import numpy as np
import pytest

from knee.analyze.recommend import advice, parts, speculation
from knee.core import jsonio
from knee.plan import config
from knee.publish import audit
from knee.publish.recommend import outputs
from tests.helpers import ROOT, run_knee

# the second reference write-up's k=7 window (results/raw/twocol-armB-metrics-after-t30.txt)
DRAFTS = 60944
ACCEPTED = [44225, 29747, 19984, 13513, 9086, 6095, 3840]


def test_per_position_rates_are_the_write_ups():
    rates = speculation.position_rates(DRAFTS, ACCEPTED)
    assert [round(100 * r, 2) for r in rates] == [72.57, 48.81, 32.79, 22.17, 14.91, 10.0, 6.3]
    # 126490 accepted over 60944 drafts: the tokens per drafted step at k=7
    assert speculation.tokens_per_step(rates, 7) == pytest.approx(1 + 126490 / DRAFTS)
    # three of seven positions accepted less than one time in six: the write-up's knee at 4-5
    assert [r < 1 / 6 for r in rates] == [False] * 4 + [True] * 3


def test_the_k4_ceiling_is_the_write_ups():
    # k=4 probe: 3478 drafts, 5738 accepted -> 2.6498 tokens per step; step 23.38 ms
    tokens = 1 + 5738 / 3478
    assert round(tokens, 4) == 2.6498
    assert speculation.ceiling_rate(4, 0.02338) == pytest.approx(213.8, abs=0.1)
    assert tokens / 0.02338 == pytest.approx(113.3, abs=0.1)


def test_a_shorter_horizon_keeps_the_accepted_prefix():
    rates = speculation.position_rates(DRAFTS, ACCEPTED)
    assert speculation.tokens_per_step(rates, 4) == pytest.approx(1 + sum(ACCEPTED[:4]) / DRAFTS)
    # measured 3.0 tokens per step at k=7 (some steps without a draft): scaled by the prefix
    assert speculation.truncated_tokens(3.0, rates, 7) == pytest.approx(3.0)
    assert speculation.truncated_tokens(3.0, rates, 4) == pytest.approx(
        1 + 2.0 * sum(ACCEPTED[:4]) / sum(ACCEPTED))
    assert speculation.truncated_tokens(3.0, rates, 0) == 1.0
    with pytest.raises(Exception, match="beyond the measured horizon"):
        speculation.tokens_per_step(rates, 8)


@pytest.mark.parametrize("knee", [3.0, 4.0, 6.0, 10.0])
def test_a_known_two_segment_sweep_returns_its_knee(knee):
    conc = [1, 2, 3, 4, 6, 8, 12, 16]
    rng = np.random.default_rng(int(knee))
    thr = [100 * min(c, knee) * (1 + rng.normal(0, 0.01)) for c in conc]
    found = speculation.throughput_knee(conc, thr)
    assert found["reason"] is None
    assert found["knee"] == pytest.approx(knee, abs=0.6)


def test_no_knee_where_throughput_keeps_rising_or_points_are_few():
    conc = [1, 2, 4, 8, 16]
    rising = speculation.throughput_knee(conc, [100 * c for c in conc])
    assert rising["knee"] is None and "still rising" in rising["reason"]
    few = speculation.throughput_knee([1, 2, 4], [100, 200, 210])
    assert few["knee"] is None and "needs 4" in few["reason"]


def test_the_step_model_recovers_known_coefficients():
    truth = (0.006, 0.0005, 0.0002, 0.0001)
    obs = [(c, k, float(np.dot(truth, speculation.design(c, k))))
           for c in (1, 2, 4, 8, 16) for k in (1, 5)]
    fit = speculation.fit_step_model(obs)
    assert fit.coef == pytest.approx(truth, rel=1e-6) and fit.rms_rel_error < 1e-9
    assert speculation.identifiable([(c, k) for c, k, _ in obs])
    # one k everywhere: the k terms cannot be told from the intercept and c
    assert not speculation.identifiable([(c, 5) for c in (1, 2, 4, 8, 16)])


def test_schedule_bands_and_ties_to_the_smaller_k():
    assert speculation.schedule([1, 2, 4, 8, 16], [5, 5, 1, 1, 1], 16) == [[1, 2, 5], [3, 16, 1]]
    assert speculation.schedule([1, 2, 4], [4, 4, 4], 32) == [[1, 32, 4]]
    assert speculation.best_k({3: 100.0, 4: 100.5, 5: 99.0}) == 3
    assert speculation.best_k({3: 90.0, 4: 100.0}) == 4


def test_crossover_is_where_the_smallest_k_starts_to_win():
    x = parts.crossover([1, 2, 4, 8, 16], [5, 5, 1, 1, 1], 1)
    assert x["concurrency"] == 4 and x["between"] == [2, 4]
    none = parts.crossover([1, 2, 4], [5, 5, 5], 1)
    assert none["concurrency"] is None and "does not win" in none["reason"]


def test_refused_when_the_data_cannot_support_it():
    rows = [{"c": c, "k": 5} for c in (1, 2, 4)]
    windows = [{"drafts": 10, "accepted_per_pos": [5, 4, 3, 2, 1], "pair": 1}]
    with pytest.raises(advice.Refused, match=r"one k only .k=5"):
        advice.check_supported({}, rows, windows, 5)
    with pytest.raises(advice.Refused, match="acceptance counters missing"):
        advice.check_supported({}, [*rows, {"c": 4, "k": 1}], [], 5)
    with pytest.raises(advice.Refused, match="speculation is off"):
        advice.check_supported({}, rows, [], 0)
    two_points = [{"c": c, "k": k} for c in (1, 2) for k in (1, 5)]
    with pytest.raises(advice.Refused, match="cannot separate"):
        advice.check_supported({}, two_points, windows, 5)


def test_an_aa_experiment_is_refused_with_its_reason():
    root = ROOT / "results" / "aa-cpu"
    rec = outputs.make(jsonio.read(root / "plan.json", "plan"), root)
    assert rec["status"] == "refused" and rec["reason"].startswith("one k only (k=5")


def test_too_few_concurrencies_are_refused():
    root = ROOT / "results" / "ksched-cpu"
    plan = jsonio.read(root / "plan.json", "plan")
    plan["instruments"]["sweep"]["concurrency"] = [1, 2]
    with pytest.raises(advice.Refused, match="too few points"):
        advice.build(plan, root)


def test_the_published_recommendation_is_recomputed_equal():
    root = ROOT / "results" / "ksched-cpu"
    assert audit.check_recommendation(root, jsonio.read(root / "plan.json", "plan")) == []
    rec = jsonio.read(root / "recommend" / "recommendation.json", "recommendation")
    assert rec["interval"]["level"] == "boot pairs" and rec["acceptance"]["horizon"] == 5
    assert {p["k"] for p in rec["predictions"]} == {1, 2, 3, 4, 5}
    assert all(p["throughput_interval"][0] <= p["throughput"] <= p["throughput_interval"][1]
               for p in rec["predictions"])


def test_a_tampered_recommendation_is_caught(results):
    path = results / "recommend" / "recommendation.json"
    data = json.loads(path.read_text())
    data["best_fixed_k"] = 3
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    problems = "\n".join(audit.check_recommendation(
        results, jsonio.read(results / "plan.json", "plan")))
    assert "recommend/recommendation.json#/best_fixed_k: differs" in problems


def schedule_rec():
    root = ROOT / "results" / "ksched-cpu"
    rec = jsonio.read(root / "recommend" / "recommendation.json", "recommendation")
    rec["schedule"] = [[1, 2, 5], [3, 16, 2]]
    rec["verify"] = [{**v, "k": 5 if v["concurrency"] <= 2 else 2} for v in rec["verify"]]
    return root, rec


def test_verify_yaml_is_a_one_variable_experiment_with_a_registered_prediction(tmp_path):
    root, rec = schedule_rec()
    plan = jsonio.read(root / "plan.json", "plan")
    cfg = outputs.verify_config(rec, plan, config.load_raw(ROOT / "config" / "config.yaml"),
                                      root / "recommend" / "recommendation.json")
    assert cfg["variable"] == outputs.SCHEDULE_KEY
    assert cfg["arms"]["candidate"]["speculative_config"][
        "num_speculative_tokens_per_batch_size"] == [[1, 2, 5], [3, 16, 2]]
    rules = {r["point"]: r for r in cfg["bar"]["rules"]}
    assert rules[1]["within_pct"] == outputs.PARITY_PCT and "min_gain_pct" in rules[16]
    _checked, verify_plan = config.plan_config(cfg, "verify.yaml", ROOT)
    assert verify_plan["prediction"]["sha256"] == hashlib.sha256(
        (root / "recommend" / "recommendation.json").read_bytes()).hexdigest()
    # the prediction is registered: another recommendation file, another bar hash
    other = tmp_path / "rec.json"
    other.write_text(json.dumps({**rec, "schema": "knee/recommendation"}))
    _, moved = config.plan_config({**cfg, "prediction": str(other)}, "verify.yaml", ROOT)
    assert moved["bar_sha256"] != verify_plan["bar_sha256"]


def test_a_prediction_that_is_not_a_recommendation_is_refused(tmp_path):
    cfg = config.load_raw(ROOT / "config" / "config.yaml")
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(Exception, match=r"prediction: .* is not a recommendation"):
        config.plan_config({**cfg, "prediction": str(bad)}, "verify.yaml", ROOT)


def test_predicted_against_measured_uses_each_arms_k():
    root, rec = schedule_rec()
    plan = jsonio.read(root / "plan.json", "plan")
    comparison = jsonio.read(root / "comparison" / "comparison.json", "comparison")
    rows = parts.predicted_vs_measured(rec, plan, comparison)
    assert {(r["arm"], r["concurrency"], r["k"]) for r in rows} >= {
        ("control", 16, 5), ("candidate", 16, 1), ("candidate", 1, 5)}
    for r in rows:
        assert r["error_pct"] == pytest.approx(100 * (r["predicted"] / r["measured"] - 1))


def test_the_embedded_and_gpu_windows_validate():
    names = ["k7v4", "k4-off", "k4v3"]
    for path in [ROOT / "config" / f"{n}.yaml" for n in names] + \
            [ROOT / "config" / "dspark-kimi-k3" / f"{n}.yaml" for n in names]:
        out = run_knee("validate-config", str(path), timeout=120)
        assert out.returncode == 0, out.stderr


def test_speculation_switched_off_in_one_arm_is_one_variable():
    cfg = config.load_raw(ROOT / "config" / "k4-off.yaml")
    _, plan = config.plan_config(cfg, "k4-off.yaml", ROOT)
    assert plan["arms"]["control"]["speculative_config"] is None
    # a second change beside it is still refused
    cfg["arms"]["candidate"]["args"] = {"seed": 1}
    with pytest.raises(Exception, match="differ outside the declared variable"):
        config.plan_config(cfg, "k4-off.yaml", ROOT)


def test_a_verification_readme_shows_predicted_against_measured():
    from knee.analyze import verification
    from knee.publish import readme

    root = ROOT / "results" / "ksched-cpu"
    plan = jsonio.read(root / "plan.json", "plan")
    comparison = jsonio.read(root / "comparison" / "comparison.json", "comparison")
    file = "results/ksched-cpu/recommend/recommendation.json"
    plan["prediction"] = {"file": file, "sha256": "0" * 64}
    rec = jsonio.read(ROOT / file, "recommendation")
    found = verification.section(plan, comparison, rec, here=None)
    assert len(found["rows"]) == 10
    errors = sorted(abs(r["error_pct"]) for r in found["rows"])
    assert found["median_abs"] == pytest.approx((errors[4] + errors[5]) / 2)
    assert found["max_abs"] == errors[-1]
    assert readme.predicted(plan, comparison) is None  # a run that verifies nothing
    shown = readme.predicted(plan, {**comparison, "prediction": found})
    assert shown is not None and shown["link"] == "recommend/recommendation.json"
    assert shown["rows"] == found["rows"]


def test_a_second_horizon_corrects_the_prefix_scaling():
    # rates at K=4; the shorter horizon k=2 measured 20 % more excess than the prefix implies
    windows = [{"drafts": 100, "accepted_per_pos": [80, 60, 40, 20], "pair": 1}]
    rows = []
    for c in (1, 2, 4, 8):
        for k, excess in ((4, 2.0), (2, 1.2 * 2.0 * 1.4 / 2.0)):
            rows.append({"session": f"1-{k}", "pair": 1, "arm": str(k), "c": c, "k": k,
                         "step_s": 0.01 + 0.001 * c + 0.0005 * k, "tokens_per_step": 1 + excess,
                         "ttft_s": 0.02, "throughput": 100.0 * c, "eta": 1.0})
    m = advice.Model(rows, windows, 128)
    assert m.availability[2] == pytest.approx(1.2) and m.availability[4] == 1.0
    assert m.tokens(1, 2) == pytest.approx(1 + 1.2 * 2.0 * 1.4 / 2.0)
    assert m.gamma(3) == pytest.approx(1.1) and m.gamma(1) == pytest.approx(1.2)
    assert m.tokens(8, 4) == pytest.approx(3.0) and m.tokens(8, 0) == 1.0


def test_the_campaign_page_says_which_arm_won_where(tmp_path):
    from knee.publish import campaign

    roots = [ROOT / "results" / "ksched-cpu", ROOT / "results" / "aa-cpu"]
    out = tmp_path / "campaign" / "README.md"
    campaign.write(roots, out)
    text = out.read_text()
    assert text.startswith("# Campaign: ksched-cpu, aa-cpu")
    for root in roots:
        assert f"]({os.path.relpath(root, out.parent)}/README.md)" in text
    comparison = jsonio.read(roots[0] / "comparison" / "comparison.json", "comparison")
    c16 = campaign.across(comparison, "sweep", "throughput", 16)
    lo, hi = c16["interval"]
    expect = "cannot tell" if lo <= 0 <= hi else ("**k=5**" if hi < 0 else "**k=1**")
    line = next(x for x in text.splitlines() if x.startswith("| throughput at c=16 |"))
    assert line.split("|")[2].strip().startswith(expect)
    # an A/A experiment has no recommendation to show, and says why
    assert "[refused](" in text and "one k only" in text


def test_a_concurrency_keeps_the_fixed_k_unless_the_gain_is_resolved():
    conc, allowed = [1, 16], [3, 4, 5]
    by = {(1, 3): 90.0, (1, 4): 95.0, (1, 5): 100.0, (16, 3): 110.0, (16, 4): 105.0,
          (16, 5): 100.0}
    sure = {"throughput": {key: [v * f for f in (0.98, 1.0, 1.02)] for key, v in by.items()}}
    fixed, best = parts.choose(conc, allowed, by, sure)
    assert fixed == 5 and [b["best_k"] for b in best] == [5, 3]
    assert best[1]["resolved"] and best[1]["k"] == 3 and best[1]["interval"][0] > 0
    # the same point estimates, but resamples in which k=3 sometimes loses: keep k=5
    shaky = {"throughput": {key: list(vals) for key, vals in sure["throughput"].items()}}
    shaky["throughput"][(16, 3)] = [90.0, 110.0, 130.0]
    _, best = parts.choose(conc, allowed, by, shaky)
    assert best[1]["best_k"] == 3 and not best[1]["resolved"] and best[1]["k"] == 5
    assert parts.allowed_ks([{"k": 1}, {"k": 5}], 5) == [1, 2, 3, 4, 5]
    assert parts.allowed_ks([{"k": 0}, {"k": 4}], 4) == [0, 4]


def test_the_audit_holds_a_verification_to_its_sealed_prediction_not_its_source(tmp_path):
    source = tmp_path / "elsewhere" / "recommendation.json"  # another experiment's, re-rendered
    source.parent.mkdir()
    source.write_text('{"schema": "knee/recommendation", "best_fixed_k": 4}\n')
    sealed = tmp_path / "verify" / "workflow" / "recommendation.json"
    sealed.parent.mkdir(parents=True)
    sealed.write_text('{"schema": "knee/recommendation"}\n')
    plan = {"prediction": {"file": str(source),
                           "sha256": hashlib.sha256(sealed.read_bytes()).hexdigest()}}
    assert audit.check_prediction(plan, tmp_path / "verify") == []
    sealed.write_text('{"schema": "knee/recommendation", "best_fixed_k": 3}\n')
    now = hashlib.sha256(sealed.read_bytes()).hexdigest()
    assert audit.check_prediction(plan, tmp_path / "verify") == [
        f"workflow/recommendation.json: sha256 {now[:12]}, plan.json#/prediction registered "
        f"{plan['prediction']['sha256'][:12]}: the prediction changed after the run was planned"]
    sealed.unlink()
    assert "workflow/recommendation.json: missing" in audit.check_prediction(
        plan, tmp_path / "verify")[0]
    assert audit.check_prediction({}, tmp_path / "verify") == []


def test_the_recommendation_carries_its_runs_cpu_speed_and_the_verification_compares(tmp_path):
    from knee.analyze import hostfigures, verification

    sampled = ROOT / "results" / "aa-cpu"  # sampled while each window ran
    plan = jsonio.read(sampled / "plan.json", "plan")
    windows = jsonio.read(sampled / "comparison" / "comparison.json",
                          "comparison")["host_speed"]["windows"]
    sweep = sorted(w["speed"] for w in windows if w["instrument"] == "sweep")
    assert len(sweep) == 6
    median = (sweep[2] + sweep[3]) / 2
    speed = advice.sweep_speed(plan, advice.sweep_windows(plan, sampled))
    assert speed == pytest.approx(median, abs=0.01)
    old = ROOT / "results" / "ksched-cpu"  # measured before the sampler: nothing to say
    old_plan = jsonio.read(old / "plan.json", "plan")
    assert advice.sweep_speed(old_plan, advice.sweep_windows(old_plan, old)) is None
    # a verification 20 % faster than the run its prediction comes from says so
    rec = jsonio.read(old / "recommend" / "recommendation.json", "recommendation")
    file = tmp_path / "recommendation.json"
    jsonio.write(file, "recommendation", {**rec, "sweep_cpu_speed": 20.0})
    vplan = jsonio.read(old / "plan.json", "plan")
    vplan["prediction"] = {"file": str(file), "sha256": "0" * 64}
    comparison = jsonio.read(old / "comparison" / "comparison.json", "comparison")
    comparison["host_speed"] = {"windows": [
        {"session": "1-control", "instrument": "sweep", "speed": 24.0},
        {"session": "1-candidate", "instrument": "sweep", "speed": 25.0},
        {"session": "1-candidate", "instrument": "fixture", "speed": 99.0}]}
    registered = jsonio.read(file, "recommendation")
    here = hostfigures.instrument_speed(comparison["host_speed"], "sweep")
    shown = verification.section(vplan, comparison, registered, here)
    assert shown["speed"] == {"measured_run": 20.0, "this_run": 24.5,
                              "difference_pct": pytest.approx(22.5)}
    assert hostfigures.instrument_speed(comparison["host_speed"], "depth") is None
    assert verification.section(vplan, comparison, registered, None)["speed"] is None


def test_the_verification_of_an_experiment_with_a_long_name_has_a_valid_name():
    root, rec = schedule_rec()
    plan = {**jsonio.read(root / "plan.json", "plan"), "name": "k" * 100}
    cfg = outputs.verify_config(rec, plan, config.load_raw(ROOT / "config" / "config.yaml"),
                                      root / "recommend" / "recommendation.json")
    assert cfg["name"] == "k" * 93 + "-verify"
    assert config.validate(cfg, "verify.yaml")["name"] == cfg["name"]
