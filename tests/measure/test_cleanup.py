"""`knee cleanup` (run by the workflow on error) stops the engine process group a session left
behind, and only that one: a pid file names a process by its id and start time together, so a
process knee did not start (another program that was given the id, or a pid file written by
hand) is never signalled."""

import subprocess
import sys
import time

import pytest

from knee.measure.runtime import process

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)
    time.sleep(0.2)
    yield proc
    proc.kill()
    proc.wait()


def test_the_process_knee_started_is_stopped(tmp_path, sleeper):
    (tmp_path / "1-control.pid").write_text(f"{sleeper.pid} {process.start_time(sleeper.pid)}\n")
    assert process.reap_pidfiles(tmp_path) == [sleeper.pid]
    assert sleeper.wait(timeout=10) != 0
    assert not list(tmp_path.glob("*.pid"))


@pytest.mark.parametrize("text", ["{pid} {other}\n", "{pid}\n", "{pid} x\n", "\x00\xff"])
def test_a_process_knee_did_not_start_is_never_signalled(tmp_path, sleeper, text):
    other = process.start_time(sleeper.pid) - 1
    (tmp_path / "1-control.pid").write_text(text.format(pid=sleeper.pid, other=other))
    assert process.reap_pidfiles(tmp_path) == []
    assert sleeper.poll() is None  # still running
    assert not list(tmp_path.glob("*.pid"))
