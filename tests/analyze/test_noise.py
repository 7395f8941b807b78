from knee.analyze import compare, inference, noise


def rec(span, tokens=11):
    return {"warmup": False, "error": None, "t_send": 0.0, "t_first": 0.5,
            "t_last": 0.5 + span, "t_done": 0.5 + span, "output_tokens": tokens}


def raw(points):
    return {"instrument": "sweep", "points": [
        {"point": p, "run": run, "wall_s": wall, "records": [rec(1.0)] * 3}
        for p, run, wall in points]}


def test_spread_is_range_over_mean():
    assert noise.spread_pct([99.0, 101.0]) == 2.0
    assert noise.spread_pct([100.0]) is None


def test_run_spread_per_point():
    r = raw([(1, 1, 1.0), (1, 2, 1.1), (8, 1, 2.0)])
    spread = noise.run_spread(r, "throughput")
    assert round(spread[1], 2) == round(100 * (33 / 1.0 - 33 / 1.1) / ((33 + 30) / 2), 2)
    assert spread[8] is None


def test_bootstrap_ci_is_seeded_and_brackets_a_clear_shift():
    a = [rec(1.0 + i / 100) for i in range(20)]  # ~10 tok/s
    b = [rec(0.5 + i / 200) for i in range(20)]  # ~20 tok/s: +100%
    ci = inference.within_pair_interval(a, b, "decode_rate_p50", seed=1)
    assert ci == inference.within_pair_interval(a, b, "decode_rate_p50", seed=1)
    assert 80 < ci[0] < ci[1] < 120
    assert inference.within_pair_interval(a, b, "e2e_p50", seed=1) is None


def test_noise_labels_name_what_the_interval_resampled():
    within = {"interval_level": "requests within one boot pair", "confidence": 0.95}
    over = {"interval_level": "boot pairs", "confidence": 0.95}
    assert noise.noise_label(5.0, 0.4, {**within, "interval": [1.0, 9.0]}) == (
        "one boot pair: 95% interval over its requests excludes zero (boot noise not in it)")
    assert noise.noise_label(5.0, 0.4, {**over, "interval": [-1.0, 9.0]}) == (
        "inside noise: 95% interval over boot pairs spans zero")
    assert noise.noise_label(-9.0, None, {**over, "interval": [-12.0, -2.0]}) == (
        "95% interval over boot pairs excludes zero")
    assert noise.noise_label(5.0, 3.0, {**over, "interval": None}) == (
        "one boot pair: no interval over boots (noise ±3.0% measured)")
    assert noise.noise_label(None, None, over) == "no delta"


def test_fixture_class_with_consistent_sign_is_flagged_like_the_seed():
    # the reference write-up's tool-JSON class: 146.8 and 146.5 vs 157.6 and 158.7 control
    def fixture(value):
        span = 10 / value
        return {"raw": {"fixture": {"instrument": "fixture", "points": [
            {"point": "tool_json", "run": 1, "wall_s": 1.0, "records": [rec(span)]}]}}}
    pairs = [(fixture(157.6), fixture(146.8)), (fixture(158.7), fixture(146.5))]
    sessions = {(p, arm): s for p, pair in enumerate(pairs, start=1)
                for arm, s in zip(("control", "candidate"), pair, strict=True)}
    [c] = compare.derived(sessions, valid=True)["fixture_classes"]
    assert c["class"] == "tool_json" and c["flag"] and c["consistent_sign"]
    assert not c["inside_control_range"]
    assert [round(d, 1) for d in c["delta_pct"]] == [-6.9, -7.7]


def test_throughput_ci_comes_from_per_request_rates():
    a = [rec(1.0 + i / 100) for i in range(20)]
    b = [rec(0.25 + i / 400) for i in range(20)]  # 0.75 s send-to-done against 1.5 s: +100%
    lo, hi = inference.within_pair_interval(a, b, "throughput", seed=3)
    assert 80 < lo < hi < 130
