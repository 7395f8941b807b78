"""Interleaved order on the real embedded engine: two tiny engines of one pair up at once on
one core of a CPU machine (the second booting once the first has), their load generators on
the other, their traffic taking turns in the registered ABBA blocks, and the folder audited.
Arms on CPU sets of their own swap them between pairs as in simultaneous order
(tests/workflow/test_simultaneous.py)."""

import re

import pytest

from knee.core import jsonio
from tests.helpers import run_two_pairs_on_two_cores


@pytest.mark.engine
def test_two_engines_on_one_core_take_turns_in_registered_blocks(
        tmp_path, default_config, results_dir, engine_python):
    root, cfg = run_two_pairs_on_two_cores(tmp_path, default_config, results_dir,
                                           "interleaved", sets=False)
    comparison = jsonio.read(root / "comparison" / "comparison.json", "comparison")
    assert comparison["verdict"] == "VALID"
    turns = comparison["interleaved"]
    assert {(w["pair"], w["instrument"]) for w in turns["windows"]} == {
        (p, i) for p in (1, 2) for i in ("sweep", "fixture")}
    # every turn as the seed drew it, the arms never sending at once; the fixture's requests
    # one a turn (its classes x requests), the sweep's loops one a turn
    assert turns["as_registered"] and turns["max_concurrent_s"] <= 0.01
    fixture = cfg["instruments"]["fixture"]
    per_arm = len(fixture["classes"]) * fixture["requests"]
    assert all(w["units"] == {"control": per_arm, "candidate": per_arm}
               for w in turns["windows"] if w["instrument"] == "fixture")
    raw = jsonio.read(root / "raw" / "1-control" / "fixture.json.gz", "raw")
    assert all(p["turn_wait_s"] >= 0 for p in raw["points"])
    readme = (root / "README.md").read_text()
    assert "interleaved: both arms' engines of a pair are up at once" in readme
    assert "on the same CPUs (only one arm sends at a time)" in readme
    for pair in (1, 2):  # the arms took as many turns, all as registered, on shared CPUs
        assert re.search(rf"\| {pair} \| shared \| shared \| (\d+) / \1 \| yes \|", readme)
    from knee.publish import audit

    problems, _ = audit.examine(root)
    assert problems == []
