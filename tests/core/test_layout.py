"""One layout of a results folder (knee.core.layout): the rules and the Python name a folder's
files only through it, so a moved output moves everywhere at once."""

import re
from pathlib import Path

import pytest

from knee.core import layout
from tests.helpers import ROOT

WORKFLOW = ROOT / "workflow"
# a folder path spelled by hand: a join onto one of the folder's parts, or a rule's output
# under {R} not built by layout
BY_HAND = re.compile(r'/ "(plan\.json|receipts|raw|comparison|protocol|figures|workflow|logs|'
                     r'MANIFEST\.sha256|ro-crate-metadata\.json)"|/ "recommend" /|'
                     r'f"\{R\}/[a-zA-Z]|results/\{[^}]*\}/[a-zA-Z]|'
                     r'f"(receipts|raw|comparison|protocol|recommend)/')


def sources() -> list[Path]:
    """Every module and rule file. Not the Snakefile: every published folder holds a copy of it
    (workflow/Snakefile, in the crate and the manifest), so it stays as it is; it names one
    path, each experiment's MANIFEST.sha256, which the next test holds to the layout."""
    return [p for p in [*WORKFLOW.rglob("*.py"), *WORKFLOW.glob("rules/*.smk")]
            if p != WORKFLOW / "knee" / "core" / "layout.py"]


def test_the_snakefile_names_only_the_manifest():
    text = (ROOT / "Snakefile").read_text()
    assert [m[1] for m in re.finditer(r'f"(?:\{R\}|results/\{name\})/([^"]+)"', text)] == \
        [layout.MANIFEST, layout.MANIFEST]
    assert "/ \"" not in text


def test_no_module_or_rule_spells_a_results_folder_path_by_hand():
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in sources()
             for i, line in enumerate(p.read_text().splitlines(), 1) if BY_HAND.search(line)]
    assert found == []


@pytest.mark.parametrize("line", [
    'plan = jsonio.read(root / "plan.json", "plan")',
    'path = Path(root) / "receipts" / f"{sid}-boot.json"',
    '        json=f"{R}/comparison/comparison.json",',
    'rec = root / "recommend" / "recommendation.json"',
    '[f"results/{name}/MANIFEST.sha256" for name in EXPERIMENTS]',
    'problems.append(f"receipts/{sid}-boot.json: image_digest")',
])
def test_the_check_sees_a_path_spelled_by_hand(line):
    assert BY_HAND.search(line)


def test_the_layout_is_the_one_the_published_folders_have():
    root = ROOT / "results" / "ksched-cpu"
    for rel in (layout.PLAN, layout.README, layout.MANIFEST, layout.CRATE, layout.COMPARISON,
                layout.BAR, layout.COMPARISON_MD, layout.VERDICT_HTML, layout.ACCEPTANCE,
                layout.ROWS, layout.REQUESTS, layout.RECOMMENDATION, layout.RECOMMEND_README,
                layout.VERIFY, layout.receipt("1-control", "boot"),
                layout.receipt("1-control", "stop"),
                layout.metrics("1-control", "sweep"), layout.figure("throughput", "svg"),
                layout.recommend_figure("png")):
        assert (root / rel).is_file(), rel
    assert (root / layout.raw_dir("1-control")).is_dir()
    assert (root / layout.WORKFLOW / "config.yaml").is_file()
    assert (ROOT / "results" / "aa-h200-35b-pinned" / layout.facts("engine.json")).is_file()
