"""`snakemake --configfile FILE` and `snakemake --config experiment=FILE` are one experiment:
the same jobs, the same plan.json, the same refusals."""

import json
import os
import re
import subprocess
import uuid

import pytest
import yaml

from tests.helpers import ROOT, run_knee, run_snakemake


def job_counts(out: str) -> dict[str, int]:
    """A dry run's job table: rule -> count."""
    table = out.split("Job stats:", 1)[1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def unique_config(tmp_path, source: str) -> tuple:
    cfg = yaml.safe_load((ROOT / source).read_text())
    cfg["name"] = f"cli-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path, cfg["name"]


def planned(tmp_path, *form: str, name: str) -> dict:
    """plan.json as the workflow's plan rule writes it under one command-line form."""
    plan = ROOT / "results" / name / "plan.json"
    try:
        # --configfile takes every word after it: the target goes first
        r = run_snakemake(str(plan.relative_to(ROOT)), *form)
        assert r.returncode == 0, r.stderr[-3000:]
        return json.loads(plan.read_text())
    finally:
        subprocess.run(["rm", "-rf", str(plan.parent)], check=False)


@pytest.mark.workflow
def test_both_forms_plan_the_same_jobs_and_the_same_plan(tmp_path):
    path, name = unique_config(tmp_path, "config/ksched.yaml")
    given = run_snakemake("-n", "--configfile", str(path))
    named = run_snakemake("-n", "--config", f"experiment={path}")
    assert given.returncode == 0 and named.returncode == 0, given.stderr[-2000:]
    assert job_counts(given.stdout) == job_counts(named.stdout)
    assert job_counts(given.stdout)["session"] == 4  # its 2 pairs
    a = planned(tmp_path, "--configfile", str(path), name=name)
    b = planned(tmp_path, "--config", f"experiment={path}", name=name)
    assert a == b and a["config_file"] == str(path)


@pytest.mark.workflow
def test_a_gpu_hosts_config_plans_on_any_machine_and_is_checked_where_it_boots(tmp_path):
    """config/aa-h200-35b-pinned.yaml pins the engine to CPUs 0-7 of the GPU host and boots
    the host's own Python: under a new name, whose sessions would all boot, `snakemake -n` and
    `knee validate-config` plan it on this machine too; `knee validate-config --here` refuses
    it naming the CPU, as the session does before it boots (tests/plan/test_machine.py)."""
    source = "config/aa-h200-35b-pinned.yaml"
    cpus = yaml.safe_load((ROOT / source).read_text())["runtime"]["engine_cpus"]
    if set(cpus) <= os.sched_getaffinity(0):
        pytest.skip("this machine has every CPU the config pins")
    path, _ = unique_config(tmp_path, source)
    r = run_snakemake("-n", "--configfile", str(path))
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    assert "rule session:" in r.stdout
    assert run_knee("validate-config", str(path), timeout=120).returncode == 0
    v = run_knee("validate-config", "--here", str(path), timeout=120)
    assert v.returncode == 1 and "runtime.engine_cpus[" in v.stderr, v.stderr
    assert "is not one this machine lets knee use" in v.stderr


@pytest.mark.workflow
def test_the_published_config_plans_its_published_folder_under_configfile():
    """`snakemake -n --configfile config/ksched-cpu.yaml` takes results/ksched-cpu as measured
    by it (the same config hash): no session to run, no plan to make again; the default
    config, since changed, is refused under that name with what differs."""
    r = run_snakemake("-n", "--configfile", "config/ksched-cpu.yaml")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "rule session:" not in r.stdout and "rule plan:" not in r.stdout
    r = run_snakemake("-n", "--configfile", "config/config.yaml", "--config", "name=ksched-cpu")
    assert r.returncode != 0
    assert "instruments.probe.temperatures: measured=[0.0, 0.8] now=[0.0]" in r.stdout + r.stderr


@pytest.mark.workflow
def test_several_configfiles_merge_as_snakemake_merges_them(tmp_path):
    base, name = unique_config(tmp_path, "config/config.yaml")
    over = tmp_path / "more-pairs.yaml"
    over.write_text("protocol:\n  pairs: 4\n")
    r = run_snakemake("-n", "--configfile", str(base), str(over))
    assert r.returncode == 0, r.stderr[-2000:]
    assert job_counts(r.stdout)["session"] == 8
    plan = planned(tmp_path, "--configfile", str(base), str(over), name=name)
    assert plan["protocol"]["pairs"] == 4 and plan["protocol"]["order"] == "counterbalanced"
    assert plan["config_file"] == f"{base} + {over}"


@pytest.mark.workflow
def test_a_bad_value_fails_the_same_way_under_both_forms(tmp_path):
    path, _ = unique_config(tmp_path, "config/config.yaml")
    path.write_text(path.read_text().replace("pairs: 3", "pairs: 0"))
    outs = [run_snakemake("-n", *form) for form in (("--configfile", str(path)),
                                                 ("--config", f"experiment={path}"))]
    messages = [next(line for line in (r.stdout + r.stderr).splitlines()
                     if "protocol.pairs" in line) for r in outs]
    assert all(r.returncode != 0 for r in outs)
    assert messages[0] == messages[1] and str(path) in messages[0] and "0" in messages[0]


@pytest.mark.workflow
def test_configfile_and_an_experiment_setting_together_are_refused(tmp_path):
    r = run_snakemake("-n", "--configfile", "config/config.yaml", "--config",
                  "experiment=config/aa-cpu.yaml")
    assert r.returncode != 0 and "two ways of naming the experiment" in r.stdout + r.stderr
