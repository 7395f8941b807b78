"""A/A on real raw data: every published boot of one arm, paired in boot order, through the same
comparison and bar as any experiment. The true effect is zero, so the intervals over boot pairs
must rarely exclude it and no parity rule may FAIL."""

import shutil
import subprocess
import sys

import pytest

from knee.analyze import aa
from knee.core import jsonio
from tests.helpers import ROOT, engine_processes, run_snakemake

PUBLISHED = [ROOT / "results" / "ksched-cpu", ROOT / "results" / "aa-cpu"]


def test_aa_from_published_boots_is_calibrated():
    plan = jsonio.read(ROOT / "results" / "aa-cpu" / "plan.json", "plan")
    result = aa.calibrate(PUBLISHED, plan["bar"]["rules"], plan["bar"]["alpha"])
    assert result["comparison"]["verdict"] == "VALID"
    assert result["pairs"] >= 4  # three control boots of ksched-cpu and six of aa-cpu
    assert result["rows"] > 40
    assert result["excluding_zero"] <= 0.10 * result["rows"], result["excluding_zero"]
    assert "FAIL" not in {r["verdict"] for r in result["bar"]["rules"]}
    for r in result["bar"]["rules"]:
        assert r["interval_level"] == "boot pairs" and len(r["per_pair"]) == result["pairs"]


def test_the_published_aa_experiment_reports_its_false_positives_and_mde():
    root = ROOT / "results" / "aa-cpu"
    readme = (root / "README.md").read_text()
    bar = jsonio.read(root / "comparison" / "bar.json", "bar")
    assert "None: an A/A experiment" in readme and "### A/A calibration" in readme
    assert "FAIL" not in {r["verdict"] for r in bar["rules"]}
    for r in bar["rules"]:
        assert r["mde_pct"] > 0 and f"{r['mde_pct']:.1f}%" in readme


@pytest.mark.workflow
def test_a_published_run_rederives_with_stopping_by_precision_and_boots_nothing(tmp_path):
    """The A/A run's raw files, planned again as {min: 2, max: 3}: the decide checkpoint looks
    after pair 2 and the DAG grows (or not) from its decision; no engine is started."""
    import yaml

    name = "aa-stopping-rederive"
    root = ROOT / "results" / name
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(ROOT / "results" / "aa-cpu", root,
                    ignore=shutil.ignore_patterns("plan.json", "logs", "failed", ".*",
                                                  "comparison",
                                                  "figures", "README.md", "MANIFEST.sha256"))
    cfg = yaml.safe_load((ROOT / "config" / "aa-cpu.yaml").read_text())
    cfg["name"] = name
    cfg["protocol"]["pairs"] = {"min": 2, "max": 3}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    try:
        # planned anew outside the folder and put in by hand (knee itself never plans a
        # measured folder again); the workflow then makes no plan and keeps the sessions'
        # measurements
        subprocess.run([sys.executable, "-m", "knee", "plan", "--config", str(path), "--out",
                        str(tmp_path / "plan.json")], cwd=ROOT, check=True, timeout=60)
        shutil.copyfile(tmp_path / "plan.json", root / "plan.json")
        r = run_snakemake("--config", f"experiment={path}", timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "rule session" not in r.stdout + r.stderr and not engine_processes(ROOT)
        look = jsonio.read(root / "protocol" / "after-pair-2.json", "decision")
        realized = jsonio.read(root / "protocol" / "realized.json", "realized")
        assert realized["pairs"] == (2 if look["stop"] else 3)
        bar = jsonio.read(root / "comparison" / "bar.json", "bar")
        assert bar["pairs"] == realized["pairs"] and bar["looks"] == 2
        assert bar["alpha_per_look"] == cfg["bar"]["alpha"] / 2
        from knee.publish import audit

        # re-planned after measurement: the receipts keep the config and the bar (a fixed
        # number of pairs, no stopping rule) they were measured under, and that is all the
        # audit may find
        problems = audit.audit(root)
        assert problems and all(p.startswith("receipts/") and ("config_sha256" in p or
                                "bar was not registered" in p) for p in problems), problems
        assert any("bar was not registered before the session booted" in p for p in problems)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(root)], check=False)
        shutil.rmtree(root, ignore_errors=True)
