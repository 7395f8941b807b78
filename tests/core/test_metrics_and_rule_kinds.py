"""Each metric and each kind of bar rule is declared once (knee.core.metrics,
knee.core.rulekinds), and every reader takes it from there: the config schema's enum, the
comparison's rows, the within-pair bootstrap, the tidy table's words, the bar's decision and
words, the plan's summary. A gain rule on a figure that is better lower is refused."""

import copy
import math

import pytest

from knee.analyze import compare, inference
from knee.core import metrics, rulekinds
from knee.core.errors import KneeError
from knee.instruments import config_schema
from knee.plan import config, summary
from knee.publish import tables


def test_every_reader_of_the_metrics_reads_the_one_table():
    rule = config_schema()["properties"]["bar"]["properties"]["rules"]["items"]["properties"]
    assert rule["metric"]["enum"] == list(metrics.NAMES)
    assert compare.METRICS == metrics.NAMES
    assert set(inference.PER_REQUEST) == set(metrics.NAMES)
    assert tables.ROW_COLUMNS["metric"] == metrics.words()
    assert [m.name for m in metrics.METRICS if m.better == "lower"] == ["ttft_p50"]


def test_the_bootstrap_resamples_each_metrics_own_request_figure_and_statistic():
    records = [{"t_send": 0.0, "t_first": 0.1 * i, "t_last": 1.0 + i, "t_done": 1.0 + i,
                "output_tokens": 11, "error": None} for i in range(1, 6)]
    for m in metrics.METRICS:
        fn, stat = inference.PER_REQUEST[m.name]
        values = [fn(r) for r in records]
        assert all(v is not None and v > 0 for v in values), m.name
        assert stat([2.0, 8.0]) == {"p50": 5.0, "mean": 5.0, "gmean": 4.0}[m.statistic]


def gain_on(default_config, metric, **kind):
    cfg = copy.deepcopy(default_config)
    cfg["bar"]["rules"] = [{"name": "faster first token", "instrument": "sweep",
                            "metric": metric, "point": 8, **kind}]
    return config.make_plan(config.validate(cfg), "x")


def test_a_gain_rule_on_a_figure_better_lower_is_refused_naming_the_rule(default_config):
    with pytest.raises(KneeError, match=r"bar.rules\[0\]: min_gain_pct 10 on ttft_p50, which "
                                        r"is better lower \(s\): a gain would read backwards"):
        gain_on(default_config, "ttft_p50", min_gain_pct=10)
    assert gain_on(default_config, "ttft_p50", within_pct=5)  # parity reads both ways
    assert gain_on(default_config, "throughput", min_gain_pct=10)


def test_a_rule_is_of_the_kind_its_key_says_and_reads_as_it_always_did():
    parity = {"name": "p", "within_pct": 1.5}
    gain = {"name": "g", "min_gain_pct": 15}
    assert rulekinds.kind(parity) is rulekinds.PARITY and rulekinds.kind(gain) is rulekinds.GAIN
    assert rulekinds.test_words(parity) == "interval inside ±1.5%"
    assert rulekinds.test_words(gain) == "interval above +15%"
    assert rulekinds.summary_words(parity) == "within ±1.5%"
    assert rulekinds.summary_words(gain) == ">= +15%"
    assert inference.margins(parity) == (inference.to_log(-1.5), inference.to_log(1.5))
    assert inference.margins({"within_pct": 100})[0] == -math.inf
    assert inference.margins(gain) == inference.to_log(15)
    with pytest.raises(KneeError, match="holds within_pct and min_gain_pct"):
        rulekinds.kind({"name": "both", "within_pct": 1, "min_gain_pct": 1})


def test_the_plans_summary_words_each_rule_by_its_kind(default_config):
    plan = config.make_plan(config.validate(default_config), "x")
    line = summary.describe(plan)
    assert "single-stream parity: fixture decode_rate_p50 @ all within ±1.5%" in line
    assert "C8 gain: sweep throughput @ 8 >= +15%" in line
