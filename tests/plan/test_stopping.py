"""Stopping by precision: the plan, the looks and the realized protocol (knee.plan.stopping)."""

import subprocess
import sys

import pytest
import yaml

from knee.core.errors import KneeError
from knee.plan import config, stopping, summary
from tests.helpers import ROOT


def adaptive(default_config, lo=2, hi=4):
    default_config["protocol"]["pairs"] = {"min": lo, "max": hi}
    return config.make_plan(config.validate(default_config))


def test_the_plan_fixes_every_pair_and_registers_the_stopping_rule(default_config):
    fixed = dict(default_config, protocol={**default_config["protocol"], "pairs": 4})
    plan = adaptive(default_config)
    assert len(plan["protocol"]["sessions"]) == 8 and plan["protocol"]["stopping"] == \
        stopping.RULE
    assert plan["bar_sha256"] != config.make_plan(config.validate(fixed))["bar_sha256"]
    assert "2 to 4 pairs, stopping by precision" in summary.describe(plan)


def test_min_above_max_is_refused(default_config):
    with pytest.raises(KneeError, match=r"protocol.pairs: min 4 is more than max 3"):
        adaptive(default_config, 4, 3)


def bar_of(verdicts):
    return {"verdict": "INCONCLUSIVE" if "INCONCLUSIVE" in verdicts else "PASS",
            "rules": [{"rule": f"r{i}", "verdict": v} for i, v in enumerate(verdicts)]}


@pytest.mark.parametrize(("verdicts", "n", "stop", "why"), [
    (["PASS", "FAIL"], 2, True, "every rule is resolved"),
    (["PASS", "INCONCLUSIVE"], 2, False, "still INCONCLUSIVE: r1"),
    (["PASS", "INCONCLUSIVE"], 4, True, "the maximum of 4 pairs is reached"),
])
def test_a_look_stops_when_every_rule_is_resolved_or_at_max(verdicts, n, stop, why):
    d = stopping.decision(bar_of(verdicts), n, {"min": 2, "max": 4})
    assert d["stop"] is stop and d["reason"] == why and d["pairs"] == n


def test_alpha_is_spent_over_the_looks():
    assert stopping.looks({"min": 2, "max": 6}) == 5 and stopping.looks(3) == 1
    assert stopping.alpha_per_look(0.05, {"min": 2, "max": 6}) == pytest.approx(0.01)


@pytest.mark.workflow
def test_dry_run_grows_the_dag_pair_by_pair(tmp_path, default_config):
    default_config["name"] = "dry-stopping"
    default_config["protocol"]["pairs"] = {"min": 2, "max": 3}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(default_config))
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                        "--config", f"experiment={path}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    assert "checkpoint decide" in out and "sessions (2 to 3 pairs, stopping by precision" in out
    # until the look after pair 2 is made, no session of pair 3 is in the DAG
    assert "sid=2-control" in out and "sid=3-" not in out
