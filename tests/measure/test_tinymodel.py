"""The tiny model is generated deterministically from its seed (real torch/transformers)."""

import json
import os
import subprocess

import pytest

from tests.helpers import ROOT


def generate(python, out, seed):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    r = subprocess.run([python, "-m", "knee.measure.tinymodel", "--out", str(out),
                        "--seed", str(seed),
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


@pytest.mark.engine
def test_an_8b_shape_without_weights_is_its_config_and_tokenizer_only(engine_python, tmp_path):
    """What a GPU config asks for (model.generate.weights: false): kilobytes, not 14 GiB, the
    same files for the same seed, and a card that says the engine draws the weights."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    shape = ["--seed", "0", "--layers", "32", "--hidden", "4096", "--heads", "32",
             "--kv-heads", "8", "--intermediate", "14336", "--vocab-size", "32000",
             "--no-weights"]
    cards = []
    for name in ("a", "b"):
        r = subprocess.run([engine_python, "-m", "knee.measure.tinymodel", "--out",
                            str(tmp_path / name), *shape], env=env, capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        cards.append(json.loads((tmp_path / name / "knee-model.json").read_text()))
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert not [f for f in files if f.endswith((".safetensors", ".bin"))], files
    assert sum((tmp_path / "a" / f).stat().st_size for f in files) < 2_000_000
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    assert (cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_key_value_heads"],
            cfg["intermediate_size"]) == (32, 4096, 8, 14336)
    assert cards[0]["sha256"] == cards[1]["sha256"]
    assert cards[0]["weights"].startswith("none: the engine draws random weights")
