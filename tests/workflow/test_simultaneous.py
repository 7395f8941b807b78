"""Simultaneous order on the real embedded engine: two tiny engines on the two cores of a CPU
machine, each with its load generator on its own core, both sessions of a pair at once, their
windows started together, the cores swapped between pairs, and the folder audited."""

import pytest
import yaml

from knee.core import jsonio
from tests.helpers import ROOT, engine_processes, logs, reduced_config, run_snakemake


@pytest.mark.engine
def test_two_engines_measure_each_pair_at_once_on_swapped_cores(tmp_path, default_config,
                                                                 results_dir, engine_python):
    default_config["protocol"]["order"] = "simultaneous"
    default_config["runtime"].pop("engine_cpus", None)
    default_config["runtime"]["arm_cpus"] = [[0], [1]]
    path = reduced_config(tmp_path, default_config, "it-simultaneous")
    cfg = yaml.safe_load(path.read_text())
    cfg["protocol"]["pairs"] = 2
    for name in ("depth", "probe"):  # the sweep and the fixture are the bar's
        del cfg["instruments"][name]
    path.write_text(yaml.safe_dump(cfg))
    root = ROOT / "results" / cfg["name"]
    results_dir.append(root)
    r = run_snakemake("--configfile", path, cores=2, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:] + logs(root)
    assert not engine_processes(ROOT)
    boots = {f"{p}-{a}": jsonio.read(root / "receipts" / f"{p}-{a}-boot.json", "boot")
             for p in (1, 2) for a in ("control", "candidate")}
    # each engine and its load generator on the arm's core, the cores swapped in pair 2
    assert {sid: (b["cpus"]["engine"], b["cpus"]["client"]) for sid, b in boots.items()} == {
        "1-control": ([0], [0]), "1-candidate": ([1], [1]),
        "2-control": ([1], [1]), "2-candidate": ([0], [0])}
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
