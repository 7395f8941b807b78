"""Raw files stored compactly and read within bounds: a new session's raw files are gzip
(the same bytes for the same text), an older folder's plain files read the same, and a file
that is not a regular one, or would expand past the limit, is refused before it is read."""

import gzip
import os
import threading

import pytest

from knee.core import jsonio, prompts, rawfiles
from knee.core.errors import KneeError
from knee.measure import client
from knee.plan import config
from tests.helpers import ROOT


def test_a_gz_name_is_written_compressed_reproducibly_and_read_expanded(tmp_path):
    text = "vllm:generation_tokens_total 12.0\n" * 1000
    a, b = tmp_path / "a.prom.before.gz", tmp_path / "b.prom.before.gz"
    jsonio.write_text(a, text)
    jsonio.write_text(b, text)
    assert a.read_bytes()[:2] == b"\x1f\x8b" and a.read_bytes() == b.read_bytes()
    assert a.stat().st_size < len(text) / 10
    assert jsonio.read_text(a) == text
    jsonio.write_text(tmp_path / "plain.txt", text)
    assert (tmp_path / "plain.txt").read_text() == text


def test_a_new_session_stores_compressed_and_an_older_one_reads_plain(tmp_path):
    new, old = tmp_path / "1-control", tmp_path / "2-control"
    new.mkdir()
    old.mkdir()
    (old / "sweep.json").write_text("{}")
    assert rawfiles.suffix(new, ["sweep"]) == ".gz" and rawfiles.suffix(old, ["sweep"]) == ""
    assert rawfiles.stored(new, "sweep.json") == new / "sweep.json.gz"
    assert rawfiles.stored(old, "sweep.json") == old / "sweep.json"
    assert rawfiles.window(new, "probe") == {
        "json": new / "probe.json.gz", "prom.before": new / "probe.prom.before.gz",
        "prom.after": new / "probe.prom.after.gz"}


def test_a_pipe_a_directory_and_a_device_are_refused_before_they_are_opened(tmp_path):
    fifo = tmp_path / "sweep.json.gz"
    os.mkfifo(fifo)
    done = []

    def read():
        with pytest.raises(KneeError) as refused:
            jsonio.read(fifo)
        done.append(refused)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(10)
    assert done, "reading a FIFO hung"
    assert "not a regular file" in str(done[0].value)
    for path in (tmp_path, "/dev/zero"):
        with pytest.raises(KneeError, match="not a regular file"):
            jsonio.read_bytes(path)


def test_a_file_past_the_limit_and_a_bomb_are_refused(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2000)
    with pytest.raises(KneeError, match=r"big.json: 2000 bytes, over the 1000"):
        jsonio.read_bytes(big, limit=1000)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * 100_000))
    assert bomb.stat().st_size < 1000
    with pytest.raises(KneeError, match=r"bomb.json.gz: expands past the 1000 bytes"):
        jsonio.read_bytes(bomb, limit=1000)
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"{}")
    with pytest.raises(KneeError, match=r"bad.json.gz: not gzip"):
        jsonio.read(bad)
    nested = tmp_path / "deep.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(KneeError, match=r"deep.json: not JSON"):
        jsonio.read(nested)


def test_sampling_is_greedy_unless_the_config_says_and_then_seeded_per_request():
    assert prompts.sampling_params(64) == {"max_tokens": 64, "min_tokens": 64,
                                           "temperature": 0.0, "top_p": 1.0,
                                           "ignore_eos": True}
    hot = prompts.sampling_params(64, {"temperature": 1.0, "top_k": 2}, seed=1234)
    assert (hot["temperature"], hot["top_k"], hot["seed"]) == (1.0, 2, 1234)
    bodies = [client.request_body("completions", "m", "p", hot, i) for i in range(3)]
    assert [b["seed"] for b in bodies] == [1234, 1235, 1236]
    assert hot["seed"] == 1234  # the window's sampling is not changed by a request
    record = prompts.profile(instrument="sweep", point=1, run=1, prompts=["p"], sampling=hot,
                             concurrency=1, warmup=0, model={"name": "m"}, dataset="d",
                             seed=1234, chunk_clock="c")
    assert record["top_k"] == 2 and record["request_seeds"].startswith("the sampling seed")


def test_a_logit_scale_names_the_model_and_reaches_its_generator():
    cfg = {"model": {"generate": {"seed": 0, "layers": 2, "hidden": 64, "logit_scale": 3e5}}}
    assert config.model_ref(cfg)["name"] == "tiny-llama-s0-l2-h64-ls300000"
    assert config.model_args(cfg).endswith("--logit-scale 300000.0")


def test_a_boot_receipt_keeps_each_sampling_record_on_one_line_and_reads_the_same(tmp_path):
    published = ROOT / "results/ksched-interleaved-14b-h200/receipts/1-control-boot.json"
    data = jsonio.read(published)
    payload = {k: v for k, v in data.items() if k not in ("schema", "schema_version")}
    out = tmp_path / "1-control-boot.json"
    assert jsonio.write(out, "boot", payload) == data
    text = out.read_text(encoding="utf-8")
    assert jsonio.loads(text) == data
    records = [r for c in data["sampling_check"] for r in c["records"]]
    lines = text.splitlines()
    assert len(records) == 32
    assert sum(line.lstrip().startswith('{"in_top":') for line in lines) == len(records)
    assert '  "argv": [' in lines and '  "session": "1-control",' in lines
    assert len(text) < 0.6 * len(jsonio.dumps(data))
    # every other kind keeps the bytes it was published with
    published_stop = published.with_name("1-control-stop.json")
    stop = jsonio.read(published_stop)
    jsonio.write(tmp_path / "stop.json", "stop",
                 {k: v for k, v in stop.items() if k not in ("schema", "schema_version")})
    assert (tmp_path / "stop.json").read_bytes() == published_stop.read_bytes()
