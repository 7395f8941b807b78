"""A command reads only the files its rule names on its command line (the rule's declared
inputs), never a file it finds beside the plan: the README and the bar of a published folder
come out byte for byte from copies of those files scattered over other folders."""

import json
import shutil

import pytest

from knee import cli
from tests.helpers import ROOT, bar_argv, readme_argv, session_inputs

PUBLISHED = ROOT / "results" / "ksched-cpu"


def close(a, b) -> bool:
    """Equal, floats to 1e-9 relative, through lists and dicts."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(close, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return a == b


def scattered(tmp_path):
    """The folder's plan and comparison in one place, its receipts in another, its
    recommendation in a third: nothing a command needs lies where the plan is."""
    here = tmp_path / "here"
    shutil.copytree(PUBLISHED, here, ignore=shutil.ignore_patterns("logs", "raw", "figures"))
    named = {"bar": bar_argv(here, tmp_path / "bar.json"),
             "readme": readme_argv(here, tmp_path / "README.md")}
    moves = {here / "receipts": tmp_path / "elsewhere" / "receipts",
             here / "recommend": tmp_path / "third" / "recommend"}
    for old, new in moves.items():
        new.parent.mkdir(parents=True)
        shutil.move(old, new)
    for argv in named.values():
        for i, a in enumerate(argv):
            for old, new in moves.items():
                if a.startswith(str(old)):
                    argv[i] = str(new) + a[len(str(old)):]
    assert not (here / "receipts").exists() and not (here / "recommend").exists()
    return named


def test_the_readme_and_the_bar_read_only_the_files_named_on_their_command_line(tmp_path):
    named = scattered(tmp_path)
    assert cli.main(named["bar"]) == 0
    assert (tmp_path / "bar.json").read_bytes() == \
        (PUBLISHED / "comparison" / "bar.json").read_bytes()
    assert cli.main(named["readme"]) == 0
    text = (tmp_path / "README.md").read_text()
    assert text == (PUBLISHED / "README.md").read_text()
    assert "compile cache (expected before boot" in text  # the cache receipts were read


def test_compare_tables_and_decide_read_only_the_session_files_named(tmp_path, capsys):
    """Handed every session file (as their rules hand them) they rebuild the published
    comparison; a session file left off their command line is named, never read from beside
    the plan."""
    here = tmp_path / "here"
    shutil.copytree(PUBLISHED, here, ignore=shutil.ignore_patterns("logs", "figures"))
    plan, inputs = str(here / "plan.json"), session_inputs(here)
    assert cli.main(["compare", "--plan", plan, "--inputs", *inputs,
                     "--out-json", str(tmp_path / "c.json")]) == 0
    assert (tmp_path / "c.json").read_bytes() == \
        (PUBLISHED / "comparison" / "comparison.json").read_bytes()
    left_off = next(p for p in inputs if p.endswith("2-candidate/sweep.json"))
    kept = [p for p in inputs if p != left_off]
    for argv in (["compare", "--out-json", str(tmp_path / "d.json")],
                 ["tables", "--comparison", str(tmp_path / "c.json"), "--out-rows",
                  str(tmp_path / "rows.csv"), "--out-requests", str(tmp_path / "r.parquet")],
                 ["decide", "--pairs", "2", "--out", str(tmp_path / "look.json")]):
        capsys.readouterr()
        assert cli.main([argv[0], "--plan", plan, "--inputs", *kept, *argv[1:]]) == 1, argv
        err = capsys.readouterr().err
        assert f"knee {argv[0]}: {left_off}" in err and "--inputs" in err, err
    assert not any((tmp_path / n).exists() for n in ("d.json", "rows.csv", "look.json"))


def test_the_rules_recommendation_reads_only_the_files_named(tmp_path, capsys):
    """knee recommend with --inputs (as its rule runs it) derives the published recommendation
    from the named files; a window's metrics left off is named and nothing is written."""
    here = tmp_path / "here"
    shutil.copytree(PUBLISHED, here, ignore=shutil.ignore_patterns("logs", "figures"))
    metrics = sorted(str(p) for p in (here / "raw").glob("*/*.metrics.json"))
    inputs = [*session_inputs(here), *metrics]
    config = str(here / "workflow" / "config.yaml")
    assert cli.main(["recommend", str(here), "--config", config, "--inputs", *inputs]) == 0
    got, published = (json.loads((r / "recommend" / "recommendation.json").read_text())
                      for r in (here, PUBLISHED))
    # the same recommendation (its fits' last digits follow the CPU's BLAS kernels)
    assert close(got, published) and got["schedule"] == [[1, 8, 5], [9, 16, 3]]
    shutil.rmtree(here / "recommend")
    left_off = next(p for p in metrics if p.endswith("1-control/probe.metrics.json"))
    capsys.readouterr()
    assert cli.main(["recommend", str(here), "--config", config, "--record-refusal",
                     "--inputs", *[p for p in inputs if p != left_off]]) == 1
    assert f"knee recommend: {left_off}" in capsys.readouterr().err
    assert not (here / "recommend").exists()

