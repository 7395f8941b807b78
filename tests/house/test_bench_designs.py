"""The designs bench: each A/A folder's between-pair CV (the spread of its pairs' effects) and
MDE per bar rule, with the folder's protocol order."""

import importlib.util
import statistics

from knee.core import jsonio
from tests.helpers import ROOT

SPEC = importlib.util.spec_from_file_location("designs", ROOT / "bench" / "designs.py")
designs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(designs)


def test_each_rule_gets_the_spread_of_its_pairs_effects_and_its_mde():
    root = ROOT / "results" / "calib-h200-35b"
    bar = jsonio.read(root / "comparison" / "bar.json", "bar")
    got = designs.rows(root)
    assert [r["rule"] for r in got] == [r["rule"] for r in bar["rules"]]
    for row, rule in zip(got, bar["rules"], strict=True):
        deltas = [p["delta_pct"] for p in rule["per_pair"]]
        assert row["cv"] == statistics.stdev(deltas) and row["pairs"] == len(deltas) == 4
        assert row["mde"] == rule["mde_pct"] and row["design"] == "counterbalanced"


def test_one_pair_has_no_spread():
    assert designs.between_pair_cv({"per_pair": [{"delta_pct": 1.0}]}) is None
