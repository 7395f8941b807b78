"""What a results README says of acceptance: what it was measured on (random weights, random
words, forced length), and each fixture class's acceptance over the boots with its interval."""

import pytest

from knee.analyze import acceptance
from knee.publish import readme
from tests.helpers import ROOT


def test_the_readme_names_what_acceptance_was_measured_on():
    plan = {"model": {"generated": True}, "instruments": {"sweep": {}, "fixture": {}}}
    said = readme.workload_caveats(plan)
    assert said[0].startswith("The model has random weights")
    assert said[1].startswith("The prompts of the sweep are random words")
    assert "past its end-of-sequence token (ignore_eos)" in said[2]
    trained = {"model": {"generated": False},
               "instruments": {"fixture": {}, "stop_at_eos": True}}
    assert readme.workload_caveats(trained) == []
    chat = {"model": {"generated": False}, "instruments": {
        "sweep": {"dataset": {"name": "sharegpt", "seed": 1}}, "stop_at_eos": True}}
    assert readme.workload_caveats(chat) == []  # a dataset's prompts are no random words


def window(session, rates):
    return {"session": session, "instrument": "fixture", "temperatures": [
        {"point": "shell", "acceptance_rate": r, "mean_acceptance_length": 1 + 4 * r,
         "per_position_rate": [r + 0.1, r - 0.1]} for r in rates]}


def test_each_class_acceptance_and_its_length_over_the_boots_with_a_t_interval():
    rows = acceptance.over_boots([window("1-control", [0.5]), window("2-control", [0.6]),
                                  window("3-control", [0.7]), window("1-candidate", [0.4])],
                                 0.95)
    control = next(r for r in rows if r["arm"] == "control")
    assert control["boots"] == 3 and control["mean"] == pytest.approx(0.6)
    # sd 0.1, t(0.975, 2) = 4.303: half-width 0.1 * 4.303 / sqrt(3)
    assert control["interval"] == pytest.approx([0.6 - 0.24843, 0.6 + 0.24843], abs=1e-4)
    # the length 1 + 4 r: mean 3.4, half-width four times the rate's
    assert control["length_mean"] == pytest.approx(3.4)
    assert control["length_interval"] == pytest.approx([3.4 - 0.99372, 3.4 + 0.99372], abs=1e-4)
    assert control["per_position_rate"] == pytest.approx([0.7, 0.5])
    candidate = next(r for r in rows if r["arm"] == "candidate")
    assert candidate["boots"] == 1 and candidate["interval"] is None
    assert candidate["length_interval"] is None


def test_the_real_model_readme_shows_acceptance_per_class_over_its_boots():
    text = (ROOT / "results" / "k7v4-h200" / "README.md").read_text()
    assert "| control | tool_json | 2 | [0.824](comparison/acceptance.json#/over_boots/" in text
    assert "| 0.824 … 0.824 | [6.526](comparison/acceptance.json#/over_boots/" in text
    assert "| 6.526 … 6.526 | 0.92, 0.92, 0.87, 0.79, 0.71, 0.71, 0.61 |" in text
    assert "The prompts of the sweep and probe are random words" in text
    assert "past its end-of-sequence token (ignore_eos)" in text
