"""A verification run's prediction is sealed in its folder when it is planned: the registered
bytes exactly, and never other bytes under the registered name."""

import hashlib
import json

from knee.plan import config, planfile
from tests.helpers import ROOT, run_knee

# a recommendation as `knee recommend` writes one (the published default's)
REC = json.loads((ROOT / "results" / "ksched-cpu" / "recommend" / "recommendation.json")
                 .read_text())


def planned(tmp_path):
    source = tmp_path / "ksched" / "recommend" / "recommendation.json"
    source.parent.mkdir(parents=True)
    source.write_text(json.dumps(REC, indent=2) + "\n")
    cfg = {**config.load_raw(ROOT / "config" / "config.yaml"), "prediction": str(source)}
    plan = tmp_path / "verify" / "plan.json"
    planfile.write_plan(plan, config.plan_config(cfg, "verify.yaml", ROOT)[1])
    return source, plan, tmp_path / "verify" / "workflow" / "recommendation.json"


def test_the_registered_bytes_are_sealed_in_the_folder(tmp_path):
    source, plan, sealed = planned(tmp_path)
    r = run_knee("prediction", "--plan", plan, "--out", sealed)
    assert r.returncode == 0, r.stderr
    assert sealed.read_bytes() == source.read_bytes()
    assert hashlib.sha256(sealed.read_bytes()).hexdigest() == \
        json.loads(plan.read_text())["prediction"]["sha256"]


def test_a_recommendation_changed_after_planning_is_refused_and_nothing_is_sealed(tmp_path):
    source, plan, sealed = planned(tmp_path)
    registered = json.loads(plan.read_text())["prediction"]["sha256"]
    source.write_text(json.dumps({**REC, "generated_by": "another run"}, indent=2) + "\n")
    r = run_knee("prediction", "--plan", plan, "--out", sealed)
    assert r.returncode == 1 and not sealed.exists()
    now = hashlib.sha256(source.read_bytes()).hexdigest()
    assert f"knee prediction: error: {plan}: prediction: {source} has sha256 {now[:12]}, the " \
           f"plan registered {registered[:12]}: the recommendation changed" in r.stderr


def test_a_plan_that_registers_no_prediction_is_refused(tmp_path):
    plan = tmp_path / "plan.json"
    planfile.write_plan(plan, config.plan_config(config.load_raw(ROOT / "config" / "config.yaml"),
                                               "config.yaml", ROOT)[1])
    r = run_knee("prediction", "--plan", plan, "--out", tmp_path / "out.json")
    assert r.returncode == 1 and "registers no prediction (not a verification run)" in r.stderr
    assert not (tmp_path / "out.json").exists()


def test_a_prediction_that_is_not_a_recommendation_as_knee_writes_one_is_refused_when_read(
        tmp_path):
    """Held to the recommendation schema when the config is read, not at the end of the run."""
    import pytest

    from knee.core.errors import KneeError

    bad = tmp_path / "recommendation.json"
    bad.write_text(json.dumps({"schema": "knee/recommendation", "status": "recommended",
                               "schedule": "k=3 everywhere"}))
    cfg = {**config.load_raw(ROOT / "config" / "config.yaml"), "prediction": str(bad)}
    with pytest.raises(KneeError, match=r"verify.yaml: prediction: .*not a recommendation as "
                                        r"`knee recommend` writes one"):
        config.plan_config(cfg, "verify.yaml", ROOT)

