"""The instrument registry (knee.instruments.spec), with the toy instrument of
tests/toy_instrument.py: its config section and bar points are checked like a built-in one's,
its derived section lands in the comparison, and a figure nothing draws or a section nothing
derives is refused when it is registered."""

import dataclasses

import pytest

from knee import instruments
from knee.core.errors import KneeError
from tests import toy_instrument
from tests.helpers import ROOT


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


def test_a_derived_section_without_a_derive_function_or_with_a_taken_key_is_refused():
    bare = dataclasses.replace(toy_instrument.SPEC, derived=("burst_spans",))
    with pytest.raises(ValueError, match="derived section 'burst_spans' has no derive function"):
        instruments.register(bare)
    taken = dataclasses.replace(toy_instrument.SPEC, derived=(
        instruments.Derived("depth_curves", toy_instrument.spans),))
    with pytest.raises(ValueError, match="comparison section 'depth_curves' is taken"):
        instruments.register(taken)
    assert "burst" not in instruments.names()


def burst_sessions(pairs: int) -> dict:
    def raw(took):
        return {"instrument": "burst", "points": [{"point": "burst", "run": 1, "records": [
            {"warmup": False, "error": None, "t_send": 1.0, "t_done": 1.0 + t} for t in took]}]}
    return {(p, arm): {"boot": {}, "raw": {"burst": raw([0.5 * p, 0.25 if arm == "control"
                                                        else 0.75])}}
            for p in range(1, pairs + 1) for arm in ("control", "candidate")}


def test_the_toys_derived_section_is_computed_from_its_windows_and_empty_where_it_did_not_run(
        toy):
    from knee.analyze import compare

    sections = compare.derived(burst_sessions(2), valid=True)
    assert list(sections) == ["fixture_classes", "depth_curves", "burst_spans"]
    assert sections["fixture_classes"] == [] == sections["depth_curves"]
    assert [(s["pair"], s["arm"], s["fastest_s"], s["slowest_s"])
            for s in sections["burst_spans"]] == [
        (1, "candidate", 0.5, 0.75), (1, "control", 0.25, 0.5),
        (2, "candidate", 0.75, 1.0), (2, "control", 0.25, 1.0)]
    # arms that did not measure the same requests: nothing is derived
    assert compare.derived(burst_sessions(2), valid=False)["burst_spans"] == []


def test_a_derived_section_cannot_take_a_key_of_the_comparison_itself(monkeypatch):
    from knee.analyze import compare

    clash = dataclasses.replace(toy_instrument.SPEC, derived=(
        instruments.Derived("rows", toy_instrument.spans),))
    plan = {"name": "x", "variable": "speculative_config", "instruments": {"seed": 1},
            "analysis": {"confidence": 0.95}, "bar": {"rules": []}}
    monkeypatch.setattr(compare, "validate_pair", lambda *a: ([], [{"field": "x"}]))
    instruments.register(clash)
    try:
        with pytest.raises(ValueError, match="takes the comparison's own key 'rows'"):
            compare.compare(plan, burst_sessions(1))
    finally:
        instruments.unregister(clash.name)


def test_a_derived_section_gives_its_caveats_to_the_readme_in_its_own_words(toy):
    from knee.publish import readme

    comparison = {"verdict": "VALID", "rows": [], "burst_spans": [
        {"pair": 1, "arm": "control", "requests": 2, "fastest_s": 0.25, "slowest_s": 1.5},
        {"pair": 1, "arm": "candidate", "requests": 0, "fastest_s": None, "slowest_s": None}]}
    said = readme.caveats(comparison, {})
    assert said == ["Burst spans, fastest to slowest request: 1-control 0.25–1.5 s."]
    assert readme.caveats({**comparison, "burst_spans": []}, {}) == []


def test_a_role_is_one_of_the_roles_and_one_instrument_s():
    with pytest.raises(ValueError, match="role 'throughput' is none of"):
        instruments.register(dataclasses.replace(toy_instrument.SPEC, role="throughput"))
    with pytest.raises(ValueError, match="role 'load' is taken"):
        instruments.register(dataclasses.replace(toy_instrument.SPEC, role=instruments.LOAD))
    assert "burst" not in instruments.names()
    assert instruments.role(instruments.LOAD) == "sweep"
    assert instruments.role(instruments.SINGLE_STREAM) == "fixture"
    assert instruments.acceptance() == ("sweep", "probe")


@pytest.fixture
def load_renamed():
    """The concurrency sweep registered as "ramp": the load instrument under another name."""
    saved = dict(instruments.REGISTRY)
    instruments.REGISTRY.clear()
    for name, spec in saved.items():
        instruments.REGISTRY[name if name != "sweep" else "ramp"] = (
            spec if name != "sweep" else dataclasses.replace(spec, name="ramp"))
    yield "ramp"
    instruments.REGISTRY.clear()
    instruments.REGISTRY.update(saved)


def test_what_reads_across_instruments_asks_the_role_not_the_name(load_renamed):
    from knee.publish import campaign

    row = {"instrument": "ramp", "pair": "all", "metric": "throughput", "point": 16,
           "delta_pct": 7.5, "interval": [2.0, 9.0], "noise": "boot pairs"}
    comparison = {"verdict": "VALID", "rows": [row]}
    plan = {"name": "x", "instruments": {"ramp": {"concurrency": [16]}},
            "arms": {"control": {}, "candidate": {}}, "variable": "none"}
    rows = campaign.winners([{"plan": plan, "comparison": comparison}])
    assert [r["what"] for r in rows] == ["single-stream decode (fixture)", "throughput at c=16"]
    assert rows[1]["cells"][0]["row"] is row


def named_instruments(path) -> list[str]:
    """The string constants of a module that are an instrument's name."""
    import ast

    names = set(instruments.names())
    return [n.value for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and n.value in names]


# modules outside the instruments that still name one, each with its reason (a Spec hook each
# is what would retire them)
STILL_NAMED = {
    # the fixture's own prompt files checked where they lie (a path check of the plan's), and
    # against the server's context
    "plan/places.py": ["fixture"],
}


def test_no_module_below_the_instruments_names_one():
    """The analysis, the publishing, the plan and the core ask the registry (roles, derived
    sections, figures, summaries, checks), so an instrument is its module alone; the few that
    still name one are listed with their reason."""
    package = ROOT / "workflow" / "knee"
    found = {str(p.relative_to(package)): named_instruments(p)
             for layer in ("analyze", "publish", "plan", "core")
             for p in sorted((package / layer).rglob("*.py"))}
    assert {p: sorted(hits) for p, hits in found.items() if hits} == STILL_NAMED
    planted = package / "instruments" / "sweep.py"  # the check finds a name where one is
    assert "sweep" in named_instruments(planted)
