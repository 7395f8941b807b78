"""The GPU path's config: an engine environment and GPUs for the process runtime, a model
generated without weights for an engine that draws them, the workflow commit stated where no
git history travelled."""


import pytest

from knee.core.errors import KneeError
from knee.plan import config, configfile, planfile
from tests.helpers import ROOT, run_knee


def h200() -> dict:
    return configfile.load(ROOT / "config" / "ksched-h200.yaml")


def test_the_gpu_configs_plan_on_any_machine():
    plan = config.make_plan(config.validate(h200(), "ksched-h200.yaml"), "ksched-h200.yaml")
    assert plan["runtime"]["gpus"] == [0]
    assert plan["runtime"]["engine"]["env"]["PYTHONPATH"] == "/tmp/site"
    assert plan["model"]["name"] == "tiny-llama-s0-l32-h4096-a32-kv8-i14336-noweights-ls300000"
    assert plan["model"]["weights"].startswith("none: the engine draws random weights")
    assert config.model_args(config.validate(h200(), "x")).endswith(
        "--kv-heads 8 --intermediate 14336 --vocab-size 32000 --max-len 4096 "
        "--logit-scale 300000.0 --no-weights")
    assert plan["instruments"]["sampling"] == {"temperature": 0.9}


def test_a_model_without_weights_needs_an_engine_that_draws_them():
    cfg = h200()
    del cfg["server"]["args"]["load-format"]
    with pytest.raises(KneeError, match=r"model.generate.weights: false .* arms.control needs "
                                        r"server.args load-format: dummy \(it has None\)"):
        config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")


def test_an_engine_environment_belongs_to_the_process_runtime():
    cfg = configfile.load(ROOT / "config" / "ksched.yaml")  # the docker runtime
    cfg["runtime"]["engine"] = h200()["runtime"]["engine"]
    with pytest.raises(KneeError, match=r"runtime.engine: only the process runtime"):
        config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")


@pytest.mark.parametrize("gpus", ["all", 2, [0, "GPU-1"]])
def test_the_process_runtime_takes_gpu_ids_only(gpus):
    cfg = h200()
    cfg["runtime"]["gpus"] = gpus
    with pytest.raises(KneeError, match=r"runtime.gpus: .*the process runtime takes a list of "
                                        r"GPU ids"):
        config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")


def test_a_tensor_parallel_engine_spans_exactly_the_gpus_it_is_given():
    """runtime.gpus [0, 1] with server.args.tensor-parallel-size 2 plans one engine over both;
    a size that does not match the GPUs named, or a GPU named twice, is refused at the plan."""
    cfg = h200()
    cfg["runtime"]["gpus"] = [0, 1]
    with pytest.raises(KneeError, match=r"x.yaml: arms.control: the engine spans 1 GPU\(s\) "
                                        r"\(tensor-parallel-size 1 \(vLLM's default\)\) but "
                                        r"runtime.gpus names 2 \(\[0, 1\]\): set "
                                        r"server.args.tensor-parallel-size: 2, or name 1 GPU"):
        config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")
    cfg["server"]["args"]["tensor-parallel-size"] = 2
    plan = config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")
    assert plan["arms"]["candidate"]["args"]["tensor-parallel-size"] == 2
    cfg["server"]["args"]["pipeline-parallel-size"] = 2
    with pytest.raises(KneeError, match=r"spans 4 GPU\(s\) \(tensor-parallel-size 2 × "
                                        r"pipeline-parallel-size 2\) but runtime.gpus names 2"):
        config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")
    del cfg["server"]["args"]["pipeline-parallel-size"]
    cfg["runtime"]["gpus"] = [1, 1]
    with pytest.raises(KneeError, match=r"runtime.gpus: \[1, 1\]: GPU 1 is named twice"):
        config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")
    cfg["runtime"]["gpus"] = [0, 1]
    cfg["server"]["args"]["tensor-parallel-size"] = "2"
    with pytest.raises(KneeError, match=r"arms.control: args.tensor-parallel-size: '2' is not a "
                                        r"whole number of GPUs"):
        config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")


@pytest.mark.parametrize(("python", "expect"), [
    ("resources/engine-venv/bin/python", r"runtime.engine.python: .* does not match"),
    ("/usr/bin/python3 -c 'import os'", r"runtime.engine.python: .* does not match")])
def test_the_engine_python_is_an_absolute_path(python, expect):
    cfg = h200()
    cfg["runtime"]["engine"]["python"] = python
    with pytest.raises(KneeError, match=expect):
        config.validate(cfg, "x.yaml")


def test_without_git_the_stated_commit_is_recorded_as_stated(tmp_path, monkeypatch):
    monkeypatch.setenv("KNEE_WORKFLOW_COMMIT", "a" * 40)
    assert config.workflow_commit(tmp_path) == {"commit": "a" * 40, "dirty": None,
                                                "stated_by": "KNEE_WORKFLOW_COMMIT"}
    monkeypatch.setenv("KNEE_WORKFLOW_COMMIT", "not a commit")
    assert config.workflow_commit(tmp_path) == {"commit": None, "dirty": None}


def test_engine_info_names_an_engine_python_that_cannot_run(tmp_path):
    plan = tmp_path / "plan.json"
    made = config.make_plan(config.validate(h200(), "x"), "x") | {"workflow": {}}
    made["runtime"]["engine"]["python"] = str(tmp_path / "no-such-python")
    planfile.write_plan(plan, made)
    r = run_knee("engine-info", "--plan", str(plan), "--out", str(tmp_path / "e.json"), timeout=60)
    assert r.returncode == 1 and "runtime.engine.python: " in r.stderr
    assert "cannot run it" in r.stderr and not (tmp_path / "e.json").exists()


def test_no_schema_holds_a_key_twice():
    """YAML keeps the last of two equal keys silently: a schema property written twice would
    lose one of its definitions. knee's own strict reader refuses that."""
    for path in sorted((ROOT / "workflow" / "schemas").glob("*.yaml")):
        configfile.parse(configfile.text_of(path), str(path))
