"""Simultaneous order on the real embedded engine: two tiny engines on the two cores of a CPU
machine, each with its load generator on its own core, both sessions of a pair at once, their
windows started together, the cores swapped between pairs, and the folder audited."""

import pytest

from knee.core import jsonio
from tests.helpers import run_two_pairs_on_two_cores


@pytest.mark.engine
def test_two_engines_measure_each_pair_at_once_on_swapped_cores(tmp_path, default_config,
                                                                 results_dir, engine_python):
    root, _ = run_two_pairs_on_two_cores(tmp_path, default_config, results_dir,
                                         "simultaneous")
    # both arms of a pair booted at once: each boot began before its partner's stop
    for p in (1, 2):
        stops = [jsonio.read(root / "receipts" / f"{p}-{a}-stop.json", "stop")
                 for a in ("control", "candidate")]
        assert all(s["completed"] for s in stops)
    comparison = jsonio.read(root / "comparison" / "comparison.json", "comparison")
    assert comparison["verdict"] == "VALID"
    together = comparison["simultaneous"]
    assert {(w["pair"], w["instrument"]) for w in together["windows"]} == {
        (p, i) for p in (1, 2) for i in ("sweep", "fixture")}
    # the windows began together (a few ms apart here; a busy machine may wake a sleeper
    # late) and ran side by side (how long each ran is the arm's own speed)
    assert together["max_skew_s"] < 1.0
    assert together["min_overlap"] > 0
    readme = (root / "README.md").read_text()
    assert "simultaneous: both sessions of a pair boot at once" in readme
    assert "| 1 | 0 | – | 1 | – |" in readme and "| 2 | 1 | – | 0 | – |" in readme
    from knee.publish import audit

    problems, _ = audit.examine(root)
    assert problems == []
