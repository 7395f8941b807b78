"""The adjusted-experiment bench: each rule against the MDE its calibration predicted, and a
folder measured on several hosts, its split pair judged apart."""

import importlib.util

from knee.core import jsonio
from tests.helpers import ROOT

SPEC = importlib.util.spec_from_file_location("adjusted", ROOT / "bench" / "adjusted.py")
adjusted = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(adjusted)
ROOT_ADJ = ROOT / "results" / "ksched-h200-35b-adj"


def stored():
    return (jsonio.read(ROOT_ADJ / "plan.json", "plan"),
            jsonio.read(ROOT_ADJ / "comparison" / "bar.json", "bar"))


def test_each_rule_sets_the_realized_mde_against_the_predicted():
    plan, bar = stored()
    single, c8, c16 = adjusted.rule_lines(plan, bar)
    # no rule shows the arms' host speed inside ±2 %: each is judged as measured, against
    # the MDE the calibration predicts without the adjustment, from its noise as estimated to
    # the upper bound a protocol is planned from
    assert single.split()[:3] == ["single-stream", "parity", "INCONCLUSIVE"]
    assert "as measured INCONCLUSIVE" in single
    assert "MDE predicted 1.39–1.81 %, realized 1.79 % (within the bound" in single
    assert "MDE predicted 1.83–2.38 %, realized 1.41 % (within the bound" in c8
    assert "MDE predicted 1.16–1.51 %, realized 0.90 % (within the bound" in c16


def test_a_folder_on_several_hosts_names_its_split_pair_and_judges_without_it():
    _, bar = stored()
    lines = adjusted.host_lines(bar)
    assert "  pair 12 split over b9099173, 83708f99" in lines
    assert sum("without split pairs (13): INCONCLUSIVE" in line for line in lines) == 1
    assert adjusted.host_lines({**bar, "hosts": None}) == ["  measured on one host"]
