"""runtime.engine.requirements: an engine environment knee builds from a pinned requirements
file (a GPU host with a package index), in a folder named by the file's sha256, and boots
like any engine environment; a file that pins nothing exactly, or lies outside the repository,
is refused before anything is built."""

import hashlib
import subprocess
import sys

import pytest

from knee.core.errors import KneeError
from knee.plan import config, places
from tests.helpers import ROOT

PINNED = "tests/data/engine-pinned.txt"


def with_requirements(default_config: dict, path: str) -> dict:
    default_config["runtime"]["engine"] = {"requirements": path,
                                           "env": {"VLLM_USE_FLASHINFER_SAMPLER": "0"}}
    return default_config


def test_the_environment_is_named_by_the_file_it_is_built_from(default_config):
    plan = config.make_plan(config.validate(with_requirements(default_config, PINNED), "x"), "x")
    assert plan["runtime"]["engine"]["requirements"] == PINNED
    digest = hashlib.sha256((ROOT / PINNED).read_bytes()).hexdigest()[:12]
    assert places.engine_python(plan["runtime"]["engine"]) == \
        f"resources/engine-{digest}/bin/python"
    assert places.engine_python({"python": "/opt/x/bin/python3"}) == "/opt/x/bin/python3"


@pytest.mark.workflow
def test_snakemake_builds_it_before_the_model_and_the_sessions(tmp_path, default_config):
    import yaml

    cfg = with_requirements(default_config, PINNED)
    cfg["name"] = "it-engine-requirements"
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                        "--configfile", str(path)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    digest = hashlib.sha256((ROOT / PINNED).read_bytes()).hexdigest()[:12]
    assert "rule engine_requirements:" in r.stdout
    assert f"resources/engine-{digest}/knee-engine.json" in r.stdout
    assert "rule engine_info:" not in r.stdout  # that rule reads an existing environment


@pytest.mark.parametrize("text, expect", [
    ("vllm>=0.26\n", r"line 1: 'vllm>=0.26' pins no exact version"),
    ("vllm==0.26.0\n--index-url https://example.test/simple\n",
     r"line 2: '--index-url https://example.test/simple' is not a pinned requirement"),
    ("-r other.txt\n", r"line 1: '-r other.txt' is not a pinned requirement"),
    ("", r"pins nothing"),
    ("vllm @ https://example.test/vllm.whl\n", r"line 1: .* pins no exact version"),
    # pip reads an option behind an environment marker as its own
    ('vllm==0.26.0 ; python_version >= "3.10" -i https://example.test/simple\n',
     r"line 1: .* pins no exact version|is not a pinned requirement"),
    ('vllm==0.26.0 ; python_version >= "3.10" --extra-index-url=https://e.test\n',
     r"line 1: .* pins no exact version|is not a pinned requirement")])
def test_a_file_that_does_not_pin_every_package_is_refused(default_config, tmp_path,
                                                           monkeypatch, text, expect):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "req.txt").write_text(text)
    with pytest.raises(KneeError, match=r"x: runtime.engine.requirements: 'req.txt': " + expect):
        places.check_requirements("req.txt", "x")


@pytest.mark.parametrize("path, expect", [
    ("missing.txt", r"is not a regular file"),
    ("../outside.txt", r"outside the working directory"),
    ("/etc/hostname", r"outside the working directory")])
def test_a_file_outside_the_repository_or_absent_is_refused(path, expect, tmp_path,
                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path.parent / "outside.txt").write_text("vllm==0.26.0\n")
    with pytest.raises(KneeError, match=expect):
        places.check_requirements(path, "x")


def test_python_and_requirements_together_are_refused(default_config):
    cfg = with_requirements(default_config, PINNED)
    cfg["runtime"]["engine"]["python"] = "/usr/bin/python3"
    with pytest.raises(KneeError, match=r"runtime.engine"):
        config.validate(cfg, "x")
