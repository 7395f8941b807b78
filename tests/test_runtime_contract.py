"""The two runtimes keep one contract (knee.runtime.endpoint.Served): base_url, exited(), and
stop() returning the stop receipt's fields the same way on every path."""

import sys
import time

import pytest

from knee.runtime.docker import Container
from knee.runtime.endpoint import stopped
from knee.runtime.process import Engine

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
    attrs = {"State": {"ExitCode": 0}}

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
