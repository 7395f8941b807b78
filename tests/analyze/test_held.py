"""Windows that did not measure their load: under 90 % of their time at their concurrency, or
held for min_window_s and shorter."""

from knee.analyze.window import held


def sessions(*points: dict) -> dict:
    return {(1, "control"): {"raw": {"sweep": {"points": list(points)}}}}


def point(c: int, share: float | None, hold: dict | None = None) -> dict:
    return {"point": c, "run": 1, "wall_s": 4.0, "concurrency_held_share": share,
            **({"hold": hold} if hold else {})}


def test_runs_under_ninety_percent_at_their_concurrency_are_named():
    rows = held.section(sessions(point(1, 0.99), point(8, 0.71), point(16, None)))
    assert rows == {"windows_not_held": [{"session": "1-control", "instrument": "sweep",
                                          "point": 8, "run": 1, "share": 0.71, "wall_s": 4.0,
                                          "min_window_s": None}]}
    (line,) = held.caveats(rows["windows_not_held"])
    assert line.startswith("sweep point 8: 1 run(s) held their concurrency for under 90 % of "
                           "their time (lowest 71 %, 1-control run 1)")


def test_a_held_run_whose_prompts_ran_out_before_min_window_s_is_said():
    short = {"min_s": 10.0, "floor": 16, "planned": 64, "sent": 64, "reached": False}
    rows = held.section(sessions(point(8, 0.95, short)))["windows_not_held"]
    assert held.caveats(rows) == [
        "sweep point 8, 1-control run 1: its prompt list ran out after 4.0 s, before "
        "min_window_s 10 s (raise max_requests_per_stream) "
        "([comparison.json](comparison/comparison.json#/windows_not_held))."]
    reached = {**short, "reached": True}
    assert held.section(sessions(point(8, 0.95, reached))) == {}
    assert held.section(sessions({"point": 1, "run": 1, "wall_s": 1.0})) == {}  # older folders
