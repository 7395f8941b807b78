"""The docker, slurm and engine markers skip a test where the service is missing (conftest.py),
and fail it under CI=true."""

import os
import subprocess
import sys

from tests.helpers import ROOT

MARKED = '''import pytest


@pytest.mark.slurm
def test_needs_slurm():
    pass
'''


def run_marked(tmp_path, ci: bool, text: str = MARKED) -> subprocess.CompletedProcess:
    test = tmp_path / "test_marked.py"
    test.write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["PATH"] = os.path.dirname(sys.executable)  # no sinfo: no cluster
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-rs",
                           "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(test)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_a_marked_test_without_its_service_is_skipped_and_says_what_it_needs(tmp_path):
    r = run_marked(tmp_path, ci=False)
    assert r.returncode == 0, r.stdout
    assert "1 skipped" in r.stdout and "needs a Slurm cluster" in r.stdout


def test_under_ci_a_missing_service_fails_the_marked_test(tmp_path):
    r = run_marked(tmp_path, ci=True)
    assert r.returncode == 1 and "1 error" in r.stdout, r.stdout  # failed in its setup
    assert "marked slurm" in r.stdout


WRONG = '''import pytest


def test_boots_unmarked(engine_python):
    pass


@pytest.mark.engine
def test_marked_never_boots():
    pass


@pytest.mark.engine
def test_right(engine_python):
    pass
'''


def test_a_test_with_the_wrong_engine_marker_stops_the_collection(tmp_path):
    r = run_marked(tmp_path, ci=False, text=WRONG)
    out = r.stdout + r.stderr
    assert r.returncode == 4, out  # a usage error, before anything runs or builds
    assert "test_boots_unmarked: needs the engine, not marked engine" in out
    assert "test_marked_never_boots: marked engine, never boots it" in out
    assert "test_right" not in out.split("wrong marker")[1]


STARTS_SNAKEMAKE = '''import subprocess
import sys

import pytest


def test_unmarked():
    subprocess.run([sys.executable, "-m", "snakemake", "--version"], check=True)


@pytest.mark.workflow
def test_marked():
    subprocess.run([sys.executable, "-m", "snakemake", "--version"], capture_output=True)
'''


def test_a_test_outside_the_slow_tiers_cannot_start_snakemake(tmp_path):
    r = run_marked(tmp_path, ci=False, text=STARTS_SNAKEMAKE)
    assert r.returncode == 1 and "1 failed, 1 passed" in r.stdout, r.stdout
    assert "test_unmarked starts Snakemake" in r.stdout and "mark it workflow" in r.stdout
