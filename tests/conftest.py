import copy
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


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
