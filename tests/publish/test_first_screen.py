"""Every published README answers on its first screen: the title gives the bar's verdict and
the rule that decided it, with its estimate and the interval that decided, at the bar's level;
under it a box of at most five lines names the model and engine and what changes how to read
the verdict."""

import re

import pytest

from knee.core import jsonio
from knee.publish import firstscreen, mdtext
from knee.publish.numbers import ci, pctf
from tests.helpers import ROOT

FOLDERS = sorted(p.parent.parent.name for p in (ROOT / "results").glob("*/comparison/bar.json"))


@pytest.mark.parametrize("name", FOLDERS)
def test_the_title_and_the_box_answer(name):
    root = ROOT / "results" / name
    bar = jsonio.read(root / "comparison" / "bar.json", "bar")
    lines = (root / "README.md").read_text().splitlines()
    title = lines[0]
    assert title.startswith(f"# {name}: bar {bar['verdict']}")
    i = firstscreen.deciding(bar)
    r = bar["rules"][i]
    assert f"{r['rule']} [{pctf(r['estimate'])}](comparison/bar.json#/rules/{i}/estimate)" \
        in title
    assert f"{100 * r['confidence']:g}% interval {ci(r['interval'])}" in title
    box = [line for line in lines[1:8] if line.startswith("> ")]
    assert 1 <= len(box) <= firstscreen.BOX_LINES and box[0].startswith("> **Model and engine**")
    assert lines[1] == "" and lines[2] == box[0]
    if bar["verdict"] == "CONFOUNDED":
        assert any("**CONFOUNDED**" in line for line in box)
    fragile = [r["rule"] for r in bar["rules"] if (r.get("robustness") or {}).get("fragile")]
    assert all(any(rule in line for line in box) for rule in fragile) or len(box) == 5


def test_the_deciding_rule_is_the_first_whose_verdict_is_the_bars():
    rules = [{"rule": "a", "verdict": "PASS"}, {"rule": "b", "verdict": "FAIL"},
             {"rule": "c", "verdict": "FAIL"}]
    assert firstscreen.deciding({"verdict": "FAIL", "rules": rules}) == 1
    assert firstscreen.deciding({"verdict": "CONFOUNDED", "rules_verdict": "FAIL",
                                 "rules": rules}) == 1
    assert firstscreen.deciding({"verdict": "PASS", "rules": rules[:1]}) == 0
    assert firstscreen.deciding({"verdict": "INCONCLUSIVE", "rules": []}) is None


def test_a_box_of_many_caveats_keeps_five_lines_and_says_there_are_more():
    bar = {"verdict": "CONFOUNDED", "rules_verdict": "FAIL", "pairs": 3,
           "confounds": [{"kind": "engine change"}],
           "hosts": {"split_pairs": [{"pair": 2}]},
           "rules": [{"rule": "r", "verdict": "FAIL", "robustness": {"fragile": True,
                                                                    "why": ["x"]},
                      "adjustment": {"applied": False}}]}
    comparison = {"verdict": "VALID", "sampling_withheld": [{"temperature": 0.8}]}
    plan = {"model": {"name": "m", "generated": True}}
    box = firstscreen.box(plan, comparison, bar, [])
    assert len(box) == 5 and box[-1] == "and more under Caveats"
    assert "random weights" in box[0] and re.search(r"3 boot pairs", box[0])


def long_tables_outside_details(text: str, limit: int = 40) -> list[int]:
    """The first line of every table of more than `limit` rows that no <details> folds."""
    out, inside, start = [], 0, None
    lines = [*text.split("\n"), ""]
    for n, line in enumerate(lines):
        if line.startswith("|"):
            start = n if start is None else start
            continue
        if start is not None and n - start - 2 > limit and not inside:
            out.append(start + 1)
        start = None
        inside += line.count("<details>") - line.count("</details>")
    return out


@pytest.mark.parametrize("name", FOLDERS)
def test_no_table_a_reader_must_scroll_past_is_left_open(name):
    """Tables of more than 40 rows are folded (their numbers stay linked); the bar's table
    puts the verdict beside the rule and each rule's per-pair effects as a range."""
    text = (ROOT / "results" / name / "README.md").read_text()
    assert long_tables_outside_details(text) == []
    header = next(line for line in text.splitlines() if line.startswith("| rule | verdict |"))
    assert "per pair (lowest … highest)" in header


def test_the_folding_keeps_every_row_and_folds_only_long_tables():
    table = ["| a |", "|---|"] + [f"| {i} |" for i in range(41)]
    short = ["| b |", "|---|", "| 1 |"]
    text = "\n".join(["# t", "", *table, "", *short, ""])
    folded = mdtext.fold(text)
    assert folded.count("<details>") == 1 and all(row in folded for row in table + short)
    assert long_tables_outside_details(folded) == [] and long_tables_outside_details(text) == [3]
    assert mdtext.fold(folded) == folded  # folded once, never twice


@pytest.mark.parametrize("name", FOLDERS)
def test_one_effect_one_number_at_the_bars_level(name):
    """The figure a bar rule decides shows, across the pairs, the rule's estimate and the
    interval that decided it, at the bar's level: not a second interval at another level."""
    root = ROOT / "results" / name
    bar = jsonio.read(root / "comparison" / "bar.json", "bar")
    text = (root / "README.md").read_text()
    for i, r in enumerate(bar["rules"]):
        if r.get("estimate") is None or not r.get("interval"):
            continue
        row = [line for line in text.splitlines()
               if line.startswith(f"| {r['point']} | {r['metric']} | all | ")
               and f"(comparison/bar.json#/rules/{i}/estimate)" in line]
        same = [j for j, o in enumerate(bar["rules"])
                if (o["instrument"], o["point"], o["metric"]) ==
                (r["instrument"], r["point"], r["metric"])]
        first = same[0]
        if r["instrument"] in {"sweep", "fixture"} and first == i:
            assert len(row) == 1, (name, r["rule"])
        for line in row:
            assert f"| {ci(r['interval'])} ({100 * r['confidence']:g}% over boot pairs) |" \
                in line, line
            assert f"the bar's rule {mdtext.text(r['rule'])}: **{r['verdict']}**" in line
