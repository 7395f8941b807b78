"""Generate a tiny Llama deterministically from a seed (random weights, BPE tokenizer), or
with --no-weights any Llama shape as its config and tokenizer only, for an engine that draws
random weights itself (vLLM's --load-format dummy): an 8B-shaped model in a few kilobytes.

Runs in the engine environment (torch, transformers, tokenizers). No download:
the tokenizer is trained on text generated here from the seed (and, given --prompt-dir, on
the files in that folder: the workflow does not pass one), the weights are drawn from a
seeded RNG.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from knee.core.prompts import WORDS as PROMPT_WORDS
from knee.core.records import Section

# the corpus the tokenizer is trained on: the prompts' words with "for" a second time, before
# "while" (the generated model's sha256, which published results record, follows this list)
WORDS = [*PROMPT_WORDS[:PROMPT_WORDS.index("while")], "for",
         *PROMPT_WORDS[PROMPT_WORDS.index("while"):]]


# a plain role-prefixed template, so /v1/chat/completions works on the tiny model
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")


def corpus(seed: int, prompt_dir: Path | None, lines: int = 4000) -> list[str]:
    rng = random.Random(seed)
    text = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 24))) for _ in range(lines)]
    if prompt_dir and prompt_dir.is_dir():
        for path in sorted(prompt_dir.rglob("*")):
            if path.is_file():
                text.extend(path.read_text(encoding="utf-8").splitlines())
    return text


def train_tokenizer(seed: int, vocab_size: int, prompt_dir: Path | None) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(seed, prompt_dir), trainer=trainer)
    return tok


def build(out: Path, seed: int, layers: int, hidden: int, heads: int, vocab_size: int,
          max_len: int, prompt_dir: Path | None, shape: Section | None = None) -> Section:
    """shape: kv_heads, intermediate (absent: heads, twice hidden), weights (False: the
    config and tokenizer only) and logit_scale (config.json's, which vLLM multiplies every logit
    by)."""
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    shape = {k: v for k, v in (shape or {}).items() if v is not None}

    tok = train_tokenizer(seed, vocab_size, prompt_dir)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")
    fast.chat_template = CHAT_TEMPLATE
    cfg = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=hidden,
        intermediate_size=shape.get("intermediate", hidden * 2),
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=shape.get("kv_heads", heads),
        max_position_embeddings=max_len,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
        **({"logit_scale": shape["logit_scale"]} if "logit_scale" in shape else {}),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=out.parent))
    try:
        tmp.chmod(0o755)
        if shape.get("weights", True):
            import torch
            from transformers import LlamaForCausalLM

            torch.manual_seed(seed)
            LlamaForCausalLM(cfg).save_pretrained(tmp, safe_serialization=True)
        else:
            cfg.save_pretrained(tmp)
        fast.save_pretrained(tmp)
        digest = model_hash(tmp)
        card = {"seed": seed, "layers": layers, "hidden": hidden, "heads": heads,
                "vocab_size": tok.get_vocab_size(), "max_len": max_len, "sha256": digest,
                **{k: v for k, v in shape.items() if k != "weights"}}
        if not shape.get("weights", True):
            card["weights"] = "none: the engine draws random weights (load-format dummy)"
        (tmp / "knee-model.json").write_text(
            json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return card


def model_hash(path: Path) -> str:
    """sha256 over (relative name, sha256 of content) of the weight, config and tokenizer files."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.name != "knee-model.json"):
        h.update(f.relative_to(path).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).hexdigest().encode() + b"\n")
    return h.hexdigest()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--max-len", type=int, default=4096)
    ap.add_argument("--kv-heads", type=int)
    ap.add_argument("--intermediate", type=int)
    ap.add_argument("--logit-scale", type=float,
                    help="config.json's logit_scale: vLLM multiplies every logit by it")
    ap.add_argument("--no-weights", action="store_true",
                    help="the config and tokenizer only (serve with --load-format dummy)")
    ap.add_argument("--prompt-dir", type=Path)
    a = ap.parse_args(argv)
    card = build(a.out, a.seed, a.layers, a.hidden, a.heads, a.vocab_size, a.max_len,
                 a.prompt_dir, {"kv_heads": a.kv_heads, "intermediate": a.intermediate,
                                "weights": not a.no_weights, "logit_scale": a.logit_scale})
    print(json.dumps(card, sort_keys=True))


if __name__ == "__main__":
    main()
