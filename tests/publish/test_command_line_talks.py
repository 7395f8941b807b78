"""The command line says what it is doing and what it found: a help a person reads in under a
second, user commands apart from the workflow's stages, a suggestion for a mistyped command, a
folder's verdict in one line, and a recommendation's schedule with the command that checks it."""

import shutil
import time

from knee.commands.registry import STAGE_OF, USER
from tests.helpers import ROOT, run_knee


def test_help_answers_within_a_second_and_groups_the_commands():
    run_knee("--help")  # a cold start reads the files once
    t0 = time.monotonic()
    r = run_knee("--help")
    took = time.monotonic() - t0
    assert r.returncode == 0 and took < 1.0, took
    users, stages = r.stdout.split("\ncommands:\n")[1].split("\n\nworkflow stages")
    assert all(f"\n  {name} " in f"\n{users}" for name in USER)
    assert all(f"\n  {name} " in stages for name in STAGE_OF if name not in USER)
    assert "\n  session " not in f"\n{users}" and "\n  audit " not in stages


def test_a_mistyped_command_is_named_with_the_nearest_one():
    r = run_knee("audti", "results/ksched-cpu")
    assert r.returncode == 2 and "no command 'audti'; did you mean 'knee audit'?" in r.stderr
    r = run_knee("zzzz")
    assert r.returncode == 2 and "did you mean" not in r.stderr and "knee --help" in r.stderr


def test_verdict_prints_the_bar_in_one_line_with_each_rules_deciding_interval(tmp_path):
    r = run_knee("verdict", ROOT / "results" / "ksched-h200-35b-adj")
    assert r.returncode == 0 and len(r.stdout.strip().splitlines()) == 1
    assert ": FAIL over 14 boot pairs: single-stream parity INCONCLUSIVE (-2.10%, 90% interval " \
           "-3.26% … -0.94%; interval inside ±1.5%); C8 gain FAIL (-10.54%" in r.stdout
    # a folder measured in several leases, as it stands after its first: pair 1 of 3
    folder = tmp_path / "qwen-al-mtbench-h100"
    shutil.copytree(ROOT / "results" / folder.name, folder)
    for rendered in folder.iterdir():
        if rendered.name not in ("plan.json", "raw", "receipts"):
            shutil.rmtree(rendered) if rendered.is_dir() else rendered.unlink()
    (folder / "raw" / "requests.parquet").unlink()
    for sid in ("2-candidate", "2-control", "3-control", "3-candidate"):
        shutil.rmtree(folder / "raw" / sid)
        for receipt in (folder / "receipts").glob(f"{sid}-*"):
            receipt.unlink()
    unfinished = run_knee("verdict", folder)
    assert unfinished.returncode == 1 and "unfinished: 2 of 6 sessions measured" in \
        unfinished.stderr and "--config name=qwen-al-mtbench-h100" in unfinished.stderr
    typo = run_knee("verdict", ROOT / "results" / "ksched-h200-35b-ad")
    assert typo.returncode == 1 and "did you mean" in typo.stderr and "35b-adj" in typo.stderr


def test_recommend_prints_the_schedule_and_the_run_that_checks_it(tmp_path):
    copy = tmp_path / "ksched-cpu"
    shutil.copytree(ROOT / "results" / "ksched-cpu", copy)
    r = run_knee("recommend", copy)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"{copy}/recommend: k=5 at 1–8 concurrent requests, k=3 at 9–16 concurrent requests",
        "check it with the paired run it registers: snakemake --config "
        f"experiment={copy}/recommend/verify.yaml"]

