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
