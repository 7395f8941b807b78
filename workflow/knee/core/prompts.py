"""Deterministic prompt sets, request profiles and their sha256 fingerprints."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from knee import __version__
from knee.core import jsonio
from knee.core.errors import KneeError
from knee.core.records import Point, RawWindow

ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}

DATASET = "knee-random-words"
DATASET_VERSION = 1
WORDS = (
    "the of and to in is for on with as by at from that this it be are was "
    "server request token model batch decode prefill cache draft accept step "
    "queue stream chunk latency throughput config schedule engine kernel expert "
    "def return import class self if else while try except yield lambda "
    "ls cd grep sed awk cat echo export git make docker run build push pull "
    "name value type id list map key error status result data items count"
).split()


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def word_prompts(seed: int, tag: str, n: int, words: int) -> list[str]:
    """n prompts of `words` words; distinct for every (seed, tag), identical across arms."""
    out = []
    for i in range(n):
        rng = _rng(seed, tag, i)
        # a unique head keeps one point's prompts from being served by another's prefix cache
        head = f"[{tag} #{i}]"
        out.append(head + " " + " ".join(rng.choice(WORDS) for _ in range(words)))
    return out


def exact_token_prompts(tokenize: Callable[[str], list[int]], seed: int, tag: str, n: int,
                        tokens: int) -> list[str]:
    """n text prompts of exactly `tokens` tokens of the model's own tokenizer (`tokenize` maps
    text to token ids without special tokens); distinct for every (seed, tag), identical across
    arms. Words are added in batches sized to the remaining gap, halved on overshoot; a single
    word that overshoots is swapped for the first word that fits."""
    out = []
    for i in range(n):
        rng = _rng(seed, tag, i)
        text = f"[{tag} #{i}]"
        count = len(tokenize(text))
        if count > tokens:
            raise KneeError(f"prompt_tokens: {tokens} is shorter than the prompt head "
                            f"{text!r} ({count} tokens)")
        while count < tokens:
            batch = [rng.choice(WORDS) for _ in range(tokens - count)]
            candidates: list[str] = []
            while batch or candidates:
                trial_text = f"{text} {' '.join(batch or candidates[:1])}"
                trial = len(tokenize(trial_text))
                if trial <= tokens:
                    text, count = trial_text, trial
                    break
                if len(batch) > 1:
                    batch = batch[:len(batch) // 2]
                elif batch:  # one word too long for the gap: try the others in order
                    batch, candidates = [], [w for w in WORDS if w != batch[0]]
                else:
                    candidates = candidates[1:]
            else:
                raise KneeError(f"prompt_tokens: cannot make {text!r} exactly {tokens} tokens "
                                f"long with this tokenizer (stuck at {count})")
        out.append(text)
    return out


PROMPT_BYTES = 1 << 20  # a prompt file holds at most this much
BYTES_PER_TOKEN = 64  # no tokenizer packs more into one token: a longer prompt cannot fit


def class_files(prompt_dir: Path, name: str) -> list[Path]:
    """A fixture class's prompt files, one prompt each, in their order: regular files inside
    the prompt folder (a link that leads out of it, a pipe or a device is refused)."""
    folder = Path(prompt_dir) / name
    files = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    if not files:
        raise KneeError(f"instruments.fixture.classes: no prompt files for class {name!r} "
                        f"(expected {folder}/*.txt)")
    top = Path(prompt_dir).resolve()
    for p in files:
        if top not in p.resolve().parents:
            raise KneeError(f"instruments.fixture.prompt_dir: {p} leads to {p.resolve()}, "
                            f"outside {prompt_dir}: a prompt is a file of the prompt folder")
        if not p.is_file():
            raise KneeError(f"instruments.fixture.prompt_dir: {p} is not a regular file")
    return files


def read_prompt(path: Path, max_model_len: int | None = None) -> str:
    """One prompt file's text: UTF-8, at most PROMPT_BYTES, and not surely longer than the
    engine's context (no tokenizer puts more than BYTES_PER_TOKEN bytes in a token)."""
    text = jsonio.read_text(path, PROMPT_BYTES)
    if max_model_len and len(text.encode()) > BYTES_PER_TOKEN * max_model_len:
        raise KneeError(f"instruments.fixture.prompt_dir: {path}: {len(text.encode())} bytes "
                        f"cannot fit max-model-len {max_model_len} in any tokenizer")
    return text


def class_prompts(prompt_dir: Path, name: str) -> list[str]:
    return [read_prompt(p) for p in class_files(prompt_dir, name)]


def fingerprint(prompts: Sequence[str] | Sequence[list[int]], sampling: Mapping[str, Any]) -> str:
    """sha256 of the exact ordered prompt set plus the sampling parameters."""
    blob = json.dumps({"prompts": prompts, "sampling": sampling}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def sampling_params(output_tokens: int, sampling: Mapping[str, Any] | None = None, seed: int = 0,
                    stop_at_eos: bool = False) -> dict[str, Any]:
    """Every request of a window: exactly output_tokens tokens (or, with stop_at_eos, at most
    that many, ending at the model's end-of-sequence token), greedy unless the config's
    instruments.sampling says otherwise (then seeded: request i samples with seed + i)."""
    out: dict[str, Any] = (
        {"max_tokens": output_tokens, "temperature": 0.0, "top_p": 1.0, "ignore_eos": False}
        if stop_at_eos else
        {"max_tokens": output_tokens, "min_tokens": output_tokens, "temperature": 0.0,
         "top_p": 1.0, "ignore_eos": True})
    if sampling:
        out.update({k: sampling[k] for k in ("temperature", "top_p", "top_k") if k in sampling})
        out["seed"] = seed
    return out


def profile(*, instrument: str, point: Point, run: int,
            prompts: Sequence[str] | Sequence[list[int]],
            sampling: Mapping[str, Any], concurrency: int, warmup: int, model: Mapping[str, Any],
            dataset: str, seed: int, chunk_clock: str, prompt_spec: str = "",
            api: str = "completions") -> dict[str, Any]:
    """The request profile of one point: what both arms must have sent, field by field."""
    return {
        "api": f"openai-{api}",
        "load": "closed-loop",
        "prompt_spec": prompt_spec,
        "tokenizer_sha256": model.get("tokenizer_sha256"),
        "top_k": sampling.get("top_k", -1),
        "request_seeds": "the sampling seed plus the request's index" if "seed" in sampling
        else None,
        "n": 1,
        "prompt_token_ids": bool(prompts) and not isinstance(prompts[0], str),
        "instrument": instrument,
        "point": point,
        "run": run,
        "endpoint": ENDPOINTS[api],
        "model_name": model["name"],
        "model_sha256": model.get("sha256"),
        "dataset": dataset,
        "dataset_version": DATASET_VERSION,
        "seed": seed,
        "requests": len(prompts),
        "warmup_requests": warmup,
        "concurrency": concurrency,
        "prompt_chars": sum(len(p) for p in prompts) if prompts and isinstance(prompts[0], str)
        else None,
        "prompt_tokens": None if not prompts or isinstance(prompts[0], str)
        else [len(p) for p in prompts],
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        **sampling,
        "client": f"knee {__version__}",
        "chunk_clock": chunk_clock,
        "prompt_sha256": fingerprint(prompts, sampling),
    }


def point_record(result: Mapping[str, Any], *, point: Point, run: int = 1,
                 extra: Mapping[str, Any] | None = None, **fields: Any) -> RawWindow:
    """One point of an instrument's raw file: its request profile, what the client measured
    (its records, wall time, held share), and any facts of the window (extra); the raw file's
    schema checks it when the file is written."""
    fields = {"concurrency": 1, "warmup": 0, "dataset": DATASET, **fields}
    return cast(RawWindow, {"point": point, "run": run, **(extra or {}),
                            "profile": profile(point=point, run=run, **fields), **result})
