"""Live progress: a line per point, a bar drawn from the client's records as they land."""

import io
import time

from knee.core import jsonio
from knee.measure import progress
from tests.helpers import ROOT


def test_a_point_line_says_rate_ttft_decode_and_requests_ok():
    raw = jsonio.read(ROOT / "results" / "ksched-cpu" / "raw" / "1-control" / "sweep.json", "raw")
    point = next(p for p in raw["points"] if p["point"] == 8 and p["run"] == 2)
    line = progress.point_line("1-control", point)
    assert line.startswith("1-control sweep point 8 run 2: ")
    assert "tok/s, TTFT p50 " in line and " ms, decode p50 " in line
    n = len(point["records"])
    assert line.endswith(f", {n}/{n} ok")


def test_the_bar_draws_what_the_client_has_done_and_ends_with_the_total():
    out, done = io.StringIO(), []
    with progress.Bar("1-control c=4", 8, done, stream=out, force=True, every_s=0.01):
        for i in range(8):
            done.append(i)
            time.sleep(0.02)
    frames = out.getvalue().split("\r")
    assert len(frames) > 3  # drawn while the window ran
    assert frames[-1].startswith("1-control c=4 [####################] 8/8 ")
    assert frames[-1].endswith(" req/s\n")


def test_no_bar_where_no_terminal_shows_it():
    out = io.StringIO()  # not a terminal
    with progress.Bar("x", 4, [1, 2], stream=out):
        time.sleep(0.05)
    assert out.getvalue() == ""


def test_a_line_goes_to_the_log(capsys):
    progress.say("1-control sweep window done: 10 points in 12.3 s")
    assert capsys.readouterr().err == "1-control sweep window done: 10 points in 12.3 s\n"


def test_the_time_left_is_the_sessions_to_run_at_the_pace_so_far():
    assert progress.time_left(6, 0, 0.0) is None
    assert progress.time_left(6, 2, 200.0) == 400.0
    assert progress.time_left(6, 6, 600.0) == 0.0
    assert progress.clock(65.4) == "1 min 05 s" and progress.clock(35) == "35 s"


def session_times(root):
    from datetime import datetime

    def at(sid, kind, field):
        stamp = jsonio.read(root / "receipts" / f"{sid}-{kind}.json", kind)[field]
        return datetime.fromisoformat(stamp).timestamp()

    plan = jsonio.read(root / "plan.json", "plan")
    return plan, [(s["id"], at(s["id"], "boot", "started_at"), at(s["id"], "stop", "stopped_at"))
                  for s in plan["protocol"]["sessions"]]


def test_on_the_default_experiments_run_every_eta_ends_within_a_fifth_of_the_real_time():
    """results/ksched-cpu is a real run of the default experiment: as each session after the
    first starts, the time left it would have been told puts the end within 20 % of the run's
    whole time of the last stop (the receipts say when each session booted and stopped)."""
    _, times = session_times(ROOT / "results" / "ksched-cpu")
    first, end = times[0][1], times[-1][2]
    for k, (_, started, _) in enumerate(times[1:], 1):
        left = progress.time_left(len(times), k, started - first)
        assert abs(started + left - end) <= 0.2 * (end - first), (k, left, end - started)


def test_a_starting_session_says_where_the_experiment_stands(tmp_path):
    import shutil

    src = ROOT / "results" / "ksched-cpu"
    plan, times = session_times(src)
    shutil.copytree(src / "receipts", tmp_path / "receipts")
    for sid, _, _ in times[3:]:  # three sessions done, the fourth starting
        (tmp_path / "receipts" / f"{sid}-stop.json").unlink()
    sid, started, _ = times[3]
    line = progress.experiment_line(plan, tmp_path, sid, started)
    spent = started - times[0][1]
    assert line == (f"session {sid}, 4 of 6: 3 done, {progress.clock(spent)} since the first "
                    f"boot; about {progress.clock(spent)} left")
    first = progress.experiment_line(plan, tmp_path / "none", times[0][0], times[0][1])
    assert first == (f"session {times[0][0]}, 1 of 6: the time left is known once a session "
                     "is done")
