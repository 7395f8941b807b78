"""A verification run's prediction: sealed in its own folder when it is planned, before any
boot, and the only copy its rules read (the recommendation it was copied from belongs to another
experiment, whose re-render may rewrite it)."""

import hashlib
import json
import shutil
import uuid

import pytest

from tests.helpers import ROOT, run_snakemake

VERIFY = ["--config", "experiment=results/ksched-cpu/recommend/verify.yaml"]
SOURCE = ROOT / "results" / "ksched-cpu" / "recommend" / "recommendation.json"


@pytest.mark.workflow
def test_planning_a_verification_run_seals_its_prediction_before_any_boot():
    name = f"verify-{uuid.uuid4().hex[:6]}"
    root = ROOT / "results" / name
    try:
        r = run_snakemake(f"results/{name}/plan.json", *VERIFY, f"name={name}", timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "rule session:" not in r.stderr and not (root / "receipts").exists()
        sealed = root / "workflow" / "recommendation.json"
        assert sealed.read_bytes() == SOURCE.read_bytes()
        registered = json.loads((root / "plan.json").read_text())["prediction"]
        assert registered == {"file": str(SOURCE.relative_to(ROOT)),
                              "sha256": hashlib.sha256(sealed.read_bytes()).hexdigest()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.workflow
def test_a_verification_run_reads_its_sealed_prediction_never_the_recommendation_it_checks():
    # the recommendation it checks belongs to another experiment, whose re-render may rewrite it
    r = run_snakemake("-n", "-p", "--forcerun", "compare", "readme", "crate", *VERIFY,
                      timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    commands = [line.removeprefix("Shell command: ") for line in r.stdout.splitlines()
                if line.startswith("Shell command: ")]
    # the comparison holds the prediction against the measurement; the README reads it there
    compared = [c for c in commands if c.startswith("knee compare ")]
    assert len(compared) == 1
    assert "--prediction results/ksched-cpu-verify/workflow/recommendation.json " in compared[0]
    assert len([c for c in commands if c.startswith("knee readme ")]) == 1
    assert not [c for c in commands if "ksched-cpu/recommend/recommendation.json" in c]
    # sealed when it was planned: no rule writes it again
    assert not [c for c in commands if c.startswith(("knee prediction", "knee plan"))]
