"""The run on a GPU host: tools/gpu/start.sh starts the workflow through tools/gpu/detach.sh, and
tools/gpu/poll.sh stops it between two pairs with SIGINT to its process group. A background
command of a non-interactive shell starts with SIGINT ignored; Python then never raises
KeyboardInterrupt, and the run would go on into its next pair (as it once did on a host)."""

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def end(pgid: int) -> None:
    """Kill what the test started, by its process group, if it is still there."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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
        end(pgid)


FAKE_RUN = """
import pathlib, sys, time
receipts = pathlib.Path(sys.argv[1])
# as Snakemake logs a job: its file lists name knee's modules, errors.py among them
print("    input: results/aa/raw/1-control/fixture.json.gz, workflow/knee/core/errors.py",
      flush=True)
try:
    time.sleep(2)  # poll.sh counts the sessions finished before it
    for pair in (1, 2, 3):
        for arm in ("control", "candidate"):
            (receipts / f"{pair}-{arm}-boot.json").write_text("{}")
            time.sleep(0.3)
            (receipts / f"{pair}-{arm}-stop.json").write_text("{}")
        time.sleep(15)  # the next pair boots later
except KeyboardInterrupt:  # as Snakemake ends on Ctrl-C: stops its jobs, exits 1
    print("Error in rule session_pair:", flush=True)
    sys.exit(1)
"""


def detached_run(tmp_path, name: str, script: str) -> tuple[dict, int]:
    """A run started as start.sh starts it, in a run folder and a job folder of the test's."""
    run, job = tmp_path / "run", tmp_path / "job"
    receipts = run / "results" / name / "receipts"
    receipts.mkdir(parents=True)
    job.mkdir()
    inner = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} {receipts} " \
            f">{job}/job.log 2>&1; echo $? >{job}/job.rc"
    subprocess.run(["bash", f"{ROOT}/tools/gpu/detach.sh", f"{job}/job.pgid", "bash", "-c", inner],
                   check=True, timeout=30)
    env = {**os.environ, "KNEE_RUN_DIR": str(run), "KNEE_JOB_DIR": str(job)}
    return env, int((job / "job.pgid").read_text())


def test_poll_stops_the_run_between_two_pairs_and_packs_the_folder(tmp_path):
    env, pgid = detached_run(tmp_path, "aa", FAKE_RUN)
    out = tmp_path / "out"
    out.mkdir()
    try:
        r = subprocess.run(["bash", f"{ROOT}/tools/gpu/poll.sh", "60", "aa", "stop", "0"],
                           env={**env, "OUT": str(out)}, capture_output=True, text=True,
                           timeout=120)
    finally:
        end(pgid)
    assert r.returncode == 0, r.stderr
    assert "sessions finished: 2 (were 0); run: 1" in r.stdout, r.stdout
    assert "SIGTERM" not in r.stdout and "cut:" not in r.stdout
    # the log's errors are shown, not the file lists of its jobs
    assert "Error in rule session_pair:" in r.stdout and "errors.py" not in r.stdout, r.stdout
    receipts = tmp_path / "run" / "results" / "aa" / "receipts"
    assert sorted(p.name for p in receipts.iterdir()) == [
        "1-candidate-boot.json", "1-candidate-stop.json", "1-control-boot.json",
        "1-control-stop.json"]
    assert [p.name for p in out.iterdir()] == ["exp.tgz.part-aa"]


def poll_running(tmp_path, script: str) -> tuple[subprocess.CompletedProcess, Path]:
    """poll.sh for 1 s over a run that goes on (the fake `script`), then the run ended; its
    output and the folder it packed into."""
    env, pgid = detached_run(tmp_path, "aa", script)
    out = tmp_path / "out"
    out.mkdir()
    try:
        time.sleep(2)  # the fake run writes what it writes at its start
        r = subprocess.run(["bash", f"{ROOT}/tools/gpu/poll.sh", "1", "aa"],
                           env={**env, "OUT": str(out)}, capture_output=True, text=True,
                           timeout=60)
    finally:
        end(pgid)
    assert r.returncode == 0, r.stderr
    return r, out


def test_poll_before_the_first_boot_names_no_session_cut(tmp_path):
    """The engine still compiling: no receipt yet, so no session was cut."""
    r, out = poll_running(tmp_path, "import time; time.sleep(30)")
    assert "sessions finished: 0 (were 0); run: running" in r.stdout, r.stdout
    assert "cut:" not in r.stdout, r.stdout
    assert [p.name for p in out.iterdir()] == ["exp.tgz.part-aa"]


RUNNING_PAIR = """
import pathlib, sys, time
log = pathlib.Path(sys.argv[1]).parent / "logs" / "session" / "pair-2.log"
log.parent.mkdir(parents=True)
left = "2 done, 7 min since the first boot; about 7 min left"
log.write_text(f"session 2-control, 3 of 4: {left}\\nsession 2-candidate, 4 of 4: {left}\\n"
               "2-control sweep point 8 run 1: 785.8 tok/s\\n"
               "2-candidate sweep point 8 run 1: 776.7 tok/s\\n")
time.sleep(30)
"""


def test_poll_shows_where_a_running_pair_stands(tmp_path):
    """While the run goes on, poll.sh shows the newest pair's last session start (with the
    time left) and its last lines, so that the next poll can be sized."""
    r, _ = poll_running(tmp_path, RUNNING_PAIR)
    now = [line for line in r.stdout.splitlines() if line.startswith("now: ")]
    assert now == ["now: session 2-candidate, 4 of 4: 2 done, 7 min since the first boot; "
                   "about 7 min left", "now: 2-control sweep point 8 run 1: 785.8 tok/s",
                   "now: 2-candidate sweep point 8 run 1: 776.7 tok/s"], r.stdout


def test_start_refuses_while_a_run_goes_on(tmp_path):
    env, pgid = detached_run(tmp_path, "aa", "import time; time.sleep(60)")
    try:
        r = subprocess.run(["bash", "tools/gpu/start.sh", "config/qwen-al-mtbench-h200.yaml"],
                           cwd=ROOT, env={**env, "KNEE_RUN_DIR": str(tmp_path / "second")},
                           capture_output=True, text=True, timeout=60)
    finally:
        end(pgid)
    assert r.returncode == 1 and f"a run is still going (process group {pgid}" in r.stderr
    assert not (tmp_path / "second").exists()
