"""The instrument registry (knee.instruments.spec), with the toy instrument of
tests/toy_instrument.py: its config section and bar points are checked like a built-in one's,
and a figure nothing draws is refused when it is registered."""

import dataclasses

import pytest

from knee import instruments
from knee.core.errors import KneeError
from tests import toy_instrument
from tests.conftest import ROOT


def test_a_bar_rule_cannot_name_a_point_the_toy_does_not_measure(toy, default_config):
    from knee.plan import config

    default_config["instruments"]["burst"] = {}
    default_config["bar"]["rules"] = [{"name": "x", "instrument": "burst", "metric": "throughput",
                                       "point": "all", "min_gain_pct": 5}]
    with pytest.raises(KneeError, match=r"bar.rules\[0\]: throughput at point 'all'"):
        config.plan_config(default_config, "toy.yaml", ROOT)
    default_config["instruments"]["burst"] = {"requests": 0}
    with pytest.raises(KneeError, match=r"instruments.burst.requests"):
        config.plan_config(default_config, "toy.yaml", ROOT)


def test_a_figure_that_nothing_draws_is_refused_when_registered():
    bare = dataclasses.replace(toy_instrument.SPEC, figures=("burst",))
    with pytest.raises(ValueError, match="figure 'burst' is registered but nothing draws it"):
        instruments.register(bare)
    undrawn = dataclasses.replace(toy_instrument.SPEC, figures=(
        instruments.Figure("burst", "t", "a", draw=None),))
    with pytest.raises(ValueError, match="nothing draws it"):
        instruments.register(undrawn)
    taken = dataclasses.replace(toy_instrument.SPEC, figures=(
        dataclasses.replace(toy_instrument.SPEC.figures[0], name="ttft"),))
    with pytest.raises(ValueError, match="figure name 'ttft' is taken"):
        instruments.register(taken)
    assert "burst" not in instruments.names()
