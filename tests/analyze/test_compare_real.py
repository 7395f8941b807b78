"""Validation on a real run's raw data (tests/data/run: one pair of the embedded engine)."""

import copy
import json

import pytest

from knee.analyze import compare
from knee.analyze.folder import load_sessions
from knee.core import jsonio
from tests.helpers import ROOT, receipts, run_knee

RUN = ROOT / "tests" / "data" / "run"
PLAN = jsonio.read(RUN / "plan.json", "plan")
SESSIONS = load_sessions(PLAN, RUN)
PROFILE_FIELDS = sorted(SESSIONS[(1, "control")]["raw"]["sweep"]["points"][0]["profile"])


def test_the_real_run_is_valid_and_checks_every_profile_field():
    result = compare.compare(PLAN, SESSIONS)
    assert result["verdict"] == "VALID", result["mismatches"]
    assert len(PROFILE_FIELDS) >= 20
    checked = {c.rsplit(":", 1)[1] for c in result["fields_checked"]}
    assert set(PROFILE_FIELDS) <= checked
    assert result["rows"]


@pytest.mark.parametrize("field", PROFILE_FIELDS)
def test_each_profile_field_changed_on_a_copy_refuses_the_comparison(field):
    sessions = copy.deepcopy(SESSIONS)
    point = sessions[(1, "candidate")]["raw"]["sweep"]["points"][-1]
    point["profile"][field] = json.dumps(["changed", point["profile"][field]])
    result = compare.compare(PLAN, sessions)
    assert result["verdict"] == "INVALID" and result["rows"] == []
    assert [(m["where"].split(" run=")[0], m["field"]) for m in result["mismatches"]] == [
        (f"pair 1 sweep point={point['point']}", field)]


@pytest.mark.parametrize("path", [("model", "sha256"), ("engine", "packages"),
                                  ("server", "args", "max-num-seqs")])
def test_model_engine_or_server_drift_refuses_the_comparison(path):
    sessions = copy.deepcopy(SESSIONS)
    target = sessions[(1, "candidate")]["boot"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = "changed"
    result = compare.compare(PLAN, sessions)
    assert result["verdict"] == "INVALID"
    assert any(m["field"].endswith(path[-1]) for m in result["mismatches"])


def test_one_pair_is_inconclusive_everywhere_it_is_shown(tmp_path):
    """One boot pair has no interval over boots: the bar says INCONCLUSIVE in bar.json, the
    README title and table, and the exit code, never PASS or FAIL."""

    from knee.analyze.bar import judge_plan
    from knee.commands.spec import EXIT_VERDICT
    from knee.publish import readme

    result = compare.compare(PLAN, SESSIONS)
    boots = [s["boot"] for s in SESSIONS.values()]
    bar = judge_plan(PLAN, result, boots)
    assert bar["verdict"] == "INCONCLUSIVE"
    assert {r["verdict"] for r in bar["rules"]} == {"INCONCLUSIVE"}
    text = readme.render(PLAN, result, bar, boots, {"windows": []})
    title = text.splitlines()[0]
    assert "bar INCONCLUSIVE" in title and "PASS" not in title and "FAIL" not in title
    assert "**Verdict of the pre-registered bar: INCONCLUSIVE**" in text
    assert "| **PASS** |" not in text and "| **FAIL** |" not in text
    assert EXIT_VERDICT["INCONCLUSIVE"] not in (EXIT_VERDICT["PASS"], EXIT_VERDICT["FAIL"])
    import shutil

    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    jsonio.write(run / "comparison.json", "comparison", result)
    r = run_knee("bar", "--plan", run / "plan.json", "--comparison", run / "comparison.json",
                 "--boots", *receipts(run, "boot"), "--out", run / "bar.json", "--exit-verdict",
                 timeout=120)
    assert r.returncode == EXIT_VERDICT["INCONCLUSIVE"] == 11, r.stderr
    assert jsonio.read(run / "bar.json", "bar")["verdict"] == "INCONCLUSIVE"
