"""tools/gpu/detach.sh, as tools/gpu/start.sh runs the workflow with it on a GPU host: the run
must end on the SIGINT that tools/gpu/poll.sh's stop sends its process group. A background
command of a non-interactive shell starts with SIGINT ignored; Python then never raises
KeyboardInterrupt, and the run would go on into its next pair."""

import os
import signal
import subprocess
import sys
import time

from tests.helpers import ROOT

CHILD = """
import pathlib, sys, time
out = pathlib.Path(sys.argv[1])
out.with_suffix(".up").write_text("up")
try:
    time.sleep(60)
except KeyboardInterrupt:
    out.write_text("interrupted")
"""


def sigint_ignored(pid: int) -> bool:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    raise AssertionError(f"no SigIgn line for {pid}")


def test_the_detached_run_ends_on_sigint_to_its_process_group(tmp_path):
    pgid_file, out = tmp_path / "job.pgid", tmp_path / "interrupted"
    # from a non-interactive shell, as start.sh runs it on the host
    subprocess.run(["bash", "-c", f"bash {ROOT}/tools/gpu/detach.sh {pgid_file} "
                    f"{sys.executable} -c '{CHILD}' {out}"], check=True, timeout=30)
    pgid = int(pgid_file.read_text())
    try:
        deadline = time.monotonic() + 30
        while not out.with_suffix(".up").exists():
            assert time.monotonic() < deadline, "the detached command never started"
            time.sleep(0.05)
        assert os.getpgid(pgid) == pgid and os.getsid(pgid) == pgid  # its own session
        assert not sigint_ignored(pgid)
        os.killpg(pgid, signal.SIGINT)
        while not out.exists():
            assert time.monotonic() < deadline, "SIGINT to the process group ended nothing"
            time.sleep(0.05)
        assert out.read_text() == "interrupted"
    finally:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
