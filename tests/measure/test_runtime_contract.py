"""The runtimes keep one contract (knee.measure.runtime.endpoint.Served): base_url, exited(), and
stop() returning the stop receipt's fields the same way on every path."""

import http.server
import sys
import threading
import time
from typing import ClassVar

import pytest

from knee.measure.runtime.docker import Container
from knee.measure.runtime.endpoint import stopped
from knee.measure.runtime.process import Engine

FIELDS = set(stopped(None, False, False, None))


def engine(tmp_path):
    return Engine(argv=[sys.executable, "-c", "import time; time.sleep(60)"], env={},
                  log=tmp_path / "e.log", host="127.0.0.1", port=8123)


def container(tmp_path, fake=None):
    return Container(image="img@sha256:" + "0" * 64, command=[], env={}, log=tmp_path / "c.log",
                     host="127.0.0.1", port=8123, model_dir="/m", cache_dir="/c", labels={},
                     container=fake)


class FakeContainer:
    """Stands in for the Docker SDK's container object in this unit test only."""

    status = "running"
    attrs: ClassVar[dict] = {"State": {"ExitCode": 0}}

    def reload(self):
        pass

    def stop(self, timeout):
        self.status = "exited"

    def wait(self, timeout):
        return {"StatusCode": 0}

    def remove(self, force):
        pass


def test_both_serve_the_same_base_url(tmp_path):
    assert engine(tmp_path).base_url == container(tmp_path).base_url == "http://127.0.0.1:8123"


def test_a_never_started_engine_stops_with_the_receipt_fields(tmp_path):
    assert engine(tmp_path).stop() == stopped(None, False, False, None)


def test_a_running_process_stops_with_the_receipt_fields(tmp_path):
    e = engine(tmp_path)
    e.start()
    time.sleep(0.2)
    assert e.exited() is None
    out = e.stop(timeout_s=5)
    assert set(out) == FIELDS and out["died_before_stop"] is False and out["exit_status"] != 0
    assert e.exited() is not None


def test_a_running_container_stops_with_the_receipt_fields(tmp_path):
    c = container(tmp_path, FakeContainer())
    assert c.exited() is None
    out = c.stop(timeout_s=5)
    assert set(out) == FIELDS and out["died_before_stop"] is False and out["exit_status"] == 0


@pytest.mark.docker
def test_a_never_started_container_stops_with_the_receipt_fields(tmp_path):
    assert container(tmp_path).stop() == stopped(None, False, False, None)


class Vllmish(http.server.BaseHTTPRequestHandler):
    """A local HTTP server answering as a vLLM server does on the paths External reads."""

    BODIES: ClassVar[dict] = {"/health": b"", "/version": b'{"version": "0.32.0"}',
              "/v1/models": b'{"data": [{"id": "tiny"}]}'}

    def do_GET(self):
        body = self.BODIES.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args):
        pass


def test_an_external_server_keeps_the_contract_and_is_never_stopped(tmp_path):
    from knee.measure.runtime.endpoint import EngineDied
    from knee.measure.runtime.external import External

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Vllmish)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    server = External(url + "/", None, tmp_path / "x.log")
    assert server.base_url == url and server.metrics_url == f"{url}/metrics"
    server.start()
    assert server.wait_healthy(5) >= 0 and server.exited() is None
    assert server.facts() == {"url": url, "metrics_url": f"{url}/metrics",
                              "booted_by_knee": False, "version": "0.32.0", "models": ["tiny"]}
    out = server.stop(timeout_s=5)
    assert set(out) == FIELDS | {"stopped_by_knee"} and out["stopped_by_knee"] is False
    assert out["died_before_stop"] is False and server.exited() is None  # still serving
    httpd.shutdown()
    httpd.server_close()
    assert server.exited() == -1
    with pytest.raises(EngineDied, match=f"the external server at {url} stopped answering"):
        server.check_alive("sweep point c=4 run 1")
