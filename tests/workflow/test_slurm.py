"""Sessions as jobs of a real Slurm cluster (tools/slurm-up.sh starts a one-node one here)."""

import os
import platform
import subprocess
import sys
import time

import pytest
import yaml

from knee.core import jsonio
from tests.helpers import ROOT, engine_processes, logs, reduced_config, wait_for_traffic

SLURM = [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "--jobs", "4"]
pytestmark = [pytest.mark.engine, pytest.mark.slurm]


def slurm_config(tmp_path, default_config, name):
    path = reduced_config(tmp_path, default_config, name, eager=True)
    cfg = yaml.safe_load(path.read_text())
    cfg["runtime"]["session_resources"] = {"cpus_per_task": os.cpu_count(), "mem_mb": 6000,
                                           "runtime": 30}
    path.write_text(yaml.safe_dump(cfg))
    return path, ROOT / "results" / cfg["name"]


def test_a_reduced_experiment_through_slurm_survives_a_scancel_mid_session(
        tmp_path, default_config, results_dir, engine_python):
    """The reduced experiment with its sessions as Slurm jobs: the candidate's job is cancelled
    while it measures, and the rerun resubmits that session alone and finishes the folder."""
    path, root = slurm_config(tmp_path, default_config, "it-slurm")
    results_dir.append(root)
    started = time.monotonic()
    proc = subprocess.Popen([*SLURM, "--config", f"experiment={path}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_traffic(proc, root / "logs" / "engine" / "1-candidate.log", 1200, "candidate")
    control = jsonio.read(root / "receipts" / "1-control-boot.json", "boot")
    control_mtime = (root / "raw" / "1-control" / "sweep.json.gz").stat().st_mtime
    running = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], capture_output=True,
                             text=True).stdout.split()
    assert running, "no running Slurm job to cancel"
    subprocess.run(["scancel", *running], check=True)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode != 0
    assert err.count("has been submitted with SLURM jobid") == 2, err[-3000:]  # the sessions
    time.sleep(3)
    assert not engine_processes(ROOT), "the cancelled job left its engine running"
    assert not (root / "receipts" / "1-candidate-boot.json").exists()
    assert not (root / "receipts" / "1-candidate-stop.json").exists()
    assert not (root / "raw" / "1-candidate" / "sweep.json.gz").exists()

    r = subprocess.run([*SLURM, "--config", f"experiment={path}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=2400)
    assert r.returncode == 0, r.stderr[-3000:] + logs(root)
    submitted = [line for line in r.stderr.splitlines() if "wildcards: sid=" in line]
    assert submitted == ["    wildcards: sid=1-candidate"] or all(
        "1-control" not in line for line in submitted)
    assert (root / "raw" / "1-control" / "sweep.json.gz").stat().st_mtime == control_mtime
    again = jsonio.read(root / "receipts" / "1-control-boot.json", "boot")
    assert again["scheduler"]["job_id"] == control["scheduler"]["job_id"]
    print(f"reduced experiment through Slurm, one session cancelled and rerun: "
          f"{time.monotonic() - started:.1f} s")
    # the sessions were Slurm jobs; plan, analysis, figures and README ran locally
    assert r.stderr.count("has been submitted with SLURM jobid") == 1, r.stderr[-3000:]
    boots = [again, jsonio.read(root / "receipts" / "1-candidate-boot.json", "boot")]
    jobs = [b["scheduler"] for b in boots]
    assert [j["kind"] for j in jobs] == ["slurm", "slurm"]
    assert jobs[0]["job_id"] != jobs[1]["job_id"] and all(j["job_id"].isdigit() for j in jobs)
    assert {j["node"] for j in jobs} == {platform.node().split(".")[0]}
    assert all(int(j["cpus_on_node"]) == os.cpu_count() for j in jobs)
    assert all("mem=6000M" in j["allocation"]["TRES"] for j in jobs), jobs
    assert all(j["cpu_affinity"] == list(range(os.cpu_count())) for j in jobs)
    # the protocol order held: the candidate booted after the control stopped
    stop = jsonio.read(root / "receipts" / "1-control-stop.json", "stop")
    assert boots[1]["started_at"] >= stop["stopped_at"]
    assert (root / "README.md").exists() and not engine_processes(ROOT)
