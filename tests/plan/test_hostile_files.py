"""Hostile input, round two, that a config alone cannot carry: prompt files that lead out of
their folder, are not text or are too big; a config that is a pipe; servers that send too much
or trickle; an engine that listens where the config did not say; campaign names too long for a
folder."""

import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from knee import cli
from knee.core.errors import KneeError
from knee.measure.host import listening
from knee.measure.runtime import endpoint
from knee.plan import config, configfile
from tests.helpers import ROOT


def config_with_prompts(tmp_path, make) -> str:
    prompts = tmp_path / "prompts"
    for name in ("shell", "code", "tool_json", "prose"):
        (prompts / name).mkdir(parents=True)
        (prompts / name / "a.txt").write_text("echo hello\n")
    make(prompts)
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["instruments"]["fixture"]["prompt_dir"] = str(prompts)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


@pytest.mark.parametrize(("make", "expect"), [
    (lambda d: (d / "shell" / "b.txt").symlink_to("/etc/hostname"),
     r"shell/b.txt leads to /etc/hostname, outside .*: a prompt is a file of the prompt folder"),
    (lambda d: (d / "code" / "b.txt").write_bytes(b"\xff\xfe bad"), r"code/b.txt: not UTF-8"),
    (lambda d: os.truncate(d / "prose" / "a.txt", 3 << 20) or None,
     r"prose/a.txt: 3145728 bytes, over the 1048576"),
    (lambda d: (d / "tool_json" / "a.txt").write_text("x" * 200_000),
     r"tool_json/a.txt: 200000 bytes cannot fit max-model-len 2048"),
    (lambda d: os.mkfifo(d / "shell" / "c.txt"), r"shell/c.txt is not a regular file"),
])
def test_a_bad_prompt_file_is_refused_at_validation(tmp_path, make, expect):
    path = config_with_prompts(tmp_path, make)
    with pytest.raises(KneeError, match=expect):
        config.make_plan(config.load(path), path)


def test_a_config_that_is_a_pipe_is_refused_without_reading_it(tmp_path, capsys):
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)
    done = []
    worker = threading.Thread(target=lambda: done.append(cli.main(["validate-config",
                                                                    str(fifo)])), daemon=True)
    worker.start()
    worker.join(10)
    assert done == [1], "validate-config hung on a FIFO"
    assert "not a regular file" in capsys.readouterr().err


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        if self.path == "/big":
            for _ in range(100):
                self.wfile.write(b"x" * 100_000)
        else:  # a trickle
            for _ in range(30):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.2)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_a_server_that_sends_too_much_or_trickles_is_cut_off(server):
    with pytest.raises(endpoint.EngineDied, match=r"/big: more than 1000000 bytes: refused"):
        endpoint.bounded_get(f"{server}/big", 30, 1_000_000)
    start = time.monotonic()
    with pytest.raises(endpoint.EngineDied, match=r"/slow: not answered in full within 1 s"):
        endpoint.bounded_get(f"{server}/slow", 1, 1_000_000)
    assert time.monotonic() - start < 3


def test_a_listener_beyond_the_configured_host_is_found():
    inside, beyond = socket.socket(), socket.socket(socket.AF_INET6)
    inside.bind(("127.0.0.1", 0))
    beyond.bind(("::", 0))
    for s in (inside, beyond):
        s.listen()
    try:
        found = listening.listening(os.getpgid(0))
        ports = {x["port"]: x["address"] for x in found}
        assert ports[inside.getsockname()[1]] == "127.0.0.1"
        assert ports[beyond.getsockname()[1]] == "::"
        assert listening.outside(found, "127.0.0.1") == [
            {"address": "::", "port": beyond.getsockname()[1]}]
        assert listening.outside(found, "0.0.0.0") == []
    finally:
        inside.close()
        beyond.close()


@pytest.mark.parametrize("rt, port, stops", [
    ({"host": "127.0.0.1"}, 8000, "runtime.internal_listeners: allow"),  # another port
    ({"host": "127.0.0.1", "internal_listeners": "allow"}, 8000, None),
    ({"host": "127.0.0.1", "internal_listeners": "allow"}, 50443, "beyond runtime.host"),
    ({"host": "0.0.0.0"}, 8000, None)])
def test_only_an_allowed_port_of_the_engine_own_listens_beyond_the_host(
        monkeypatch, capsys, rt, port, stops):
    found = [{"address": "127.0.0.1", "port": 8000}, {"address": "::", "port": 50443}]
    monkeypatch.setattr(listening, "listening", lambda pgid: found)
    args = (1, rt["host"], port, rt.get("internal_listeners"), "1-control")
    if stops:
        with pytest.raises(KneeError, match=r"listens on :::50443, beyond runtime.host") as e:
            listening.check(*args)
        assert stops in str(e.value)
    else:
        assert listening.check(*args) == found
        assert (":::50443" in capsys.readouterr().err) == ("internal_listeners" in rt)


def test_a_campaign_over_long_names_gets_a_folder_name_that_fits():
    assert configfile.campaign_folder(["k7v4", "k4-off", "k4v3"]) == \
        "campaign-k7v4-k4-off-k4v3"  # the published page keeps its name
    long = [f"experiment-{i}-" + "x" * 90 for i in range(3)]
    name = configfile.campaign_folder(long)
    assert name.startswith("campaign-3-experiments-") and len(name.encode()) <= 200
    assert name != configfile.campaign_folder([*long[:2], "other"])


def test_nothing_outside_a_results_folder_is_read_or_printed(results, tmp_path):
    """A manifest line naming ../x, a README link into ../outside.json or through a link that
    leads out: named as leading outside, never read."""
    from knee.publish import audit, trace

    secret = tmp_path / "outside.json"
    secret.write_text('{"secret": "do-not-print"}')
    manifest = results / "MANIFEST.sha256"
    manifest.write_text(manifest.read_text() + f"{'0' * 64}  ../outside.json\n")
    problems = audit.check_manifest(results)
    assert any("../outside.json: leads outside" in p for p in problems), problems
    readme = results / "README.md"
    readme.write_text(readme.read_text() + "\n[7](../outside.json#/secret) "
                      "[8](comparison/out.json#/secret)\n")
    with pytest.raises(KneeError, match="leads outside") as e:
        trace.trace(results, "7")
    assert "do-not-print" not in str(e.value)
    # a link in the folder: the folder is refused before anything in it is read
    (results / "comparison" / "out.json").symlink_to(secret)
    with pytest.raises(KneeError, match=r"comparison/out.json is a symbolic link: not followed") \
            as e:
        trace.trace(results, "8")
    assert "do-not-print" not in str(e.value)
    (results / "comparison" / "out.json").unlink()
    readme.write_text(readme.read_text() + "\n[9](comparison/bar.json#/no/such)\n")
    with pytest.raises(KneeError, match=r"comparison/bar.json#/no/such: no such value"):
        trace.trace(results, "9")


def test_an_aa_may_measure_one_external_server_and_an_ab_may_not():
    cfg = configfile.load(ROOT / "config" / "aa-cpu.yaml")
    one = {"url": "http://127.0.0.1:8000"}
    cfg["runtime"] = {"kind": "external", "servers": {"control": one, "candidate": one}}
    assert config.make_plan(config.validate(cfg, "aa.yaml"), "aa.yaml")["variable"] == "none"
    cfg["variable"], cfg["arms"]["candidate"] = "args.max-num-seqs", {"args": {"max-num-seqs": 4}}
    with pytest.raises(KneeError, match=r"candidate.url: .* is the control's server too"):
        config.make_plan(config.validate(cfg, "ab.yaml"), "ab.yaml")
