"""The tiny model is generated deterministically from its seed (real torch/transformers)."""

import json
import os
import subprocess

import pytest

from tests.conftest import ROOT


def generate(python, out, seed):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    r = subprocess.run([python, "-m", "knee.tinymodel", "--out", str(out), "--seed", str(seed),
                        "--layers", "1", "--hidden", "64", "--heads", "2", "--vocab-size", "512"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads((out / "knee-model.json").read_text())


@pytest.mark.engine
def test_same_seed_same_model_other_seed_other_model(engine_python, tmp_path):
    a = generate(engine_python, tmp_path / "a", 7)
    b = generate(engine_python, tmp_path / "b", 7)
    c = generate(engine_python, tmp_path / "c", 8)
    assert a["sha256"] == b["sha256"]
    assert a["sha256"] != c["sha256"]
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == \
        (tmp_path / "b" / "model.safetensors").read_bytes()
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    assert cfg["num_hidden_layers"] == 1 and cfg["hidden_size"] == 64
