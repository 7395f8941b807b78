"""Every bad config in tests/hostile_cases.py is refused before anything runs, by knee itself,
by `knee validate-config` and by `snakemake -n`: one message naming the file, key and value,
no traceback, nothing booted, nothing written outside .snakemake/."""

import os
import re
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from knee.core.errors import KneeError
from knee.plan import config, planfile
from tests import helpers
from tests.helpers import ROOT, engine_processes
from tests.hostile_cases import CASES, COMMAND_LINE

SNAKEMAKE = [*helpers.SNAKEMAKE, "--cores", "1", "-n"]


def test_the_corpus_is_large_and_distinct():
    ids = [c.id for c in CASES] + [c[0] for c in COMMAND_LINE]
    assert len(ids) >= 70 and len(set(ids)) == len(ids)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refused_by_knee(case, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_bytes(case.file(f"hostile-{case.id}"))
    with pytest.raises(KneeError) as e:
        config.validate_here(path)
    assert re.search(case.expect, str(e.value)), str(e.value)
    assert str(path) in str(e.value)


def written() -> set[str]:
    """What exists where a run writes (results, logs, resources): nothing may appear."""
    return {str(p.relative_to(ROOT)) for d in ("results", "logs", "resources")
            for p in (ROOT / d).glob("*")}


def problem(argv: list[str], expect: str, timeout: float = 60) -> tuple[str | None, str]:
    """(what is wrong with the refusal, or None; the output)."""
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    out = r.stdout + r.stderr
    if r.returncode == 0:
        return "accepted", out
    if not re.search(expect, out):
        return f"message does not match {expect!r}", out
    if "Traceback (most recent call last)" in out:
        return "traceback", out
    return None, out


def refused(argv: list[str], expect: str, timeout: float = 60) -> str:
    wrong, out = problem(argv, expect, timeout)
    assert wrong is None, f"{wrong}:\n{out[-3000:]}"
    return out


# Files Snakemake's own loader cannot read as a mapping: under --configfile it refuses them, in
# its words and without naming the file, before any workflow code runs; a file that is not
# UTF-8, an integer past Python's 4300 digits and a nesting past Python's recursion limit it
# refuses with a traceback of its own (SNAKEMAKE_TRACEBACK). The other form and
# `knee validate-config` refuse them in knee's words.
SNAKEMAKE_TRACEBACK = {"not-utf8", "int-huge", "deep-nesting"}
SNAKEMAKE_LOADER = {"yaml-syntax", "tab-indent", "top-level-list", "empty-file",
                    "python-tag"} | SNAKEMAKE_TRACEBACK
SNAKEMAKE_REFUSAL = (r"Config file (is not valid JSON or YAML|must be given as JSON or YAML with "
                     r"keys at top level)|UnicodeDecodeError: 'utf-8' codec can't decode|"
                     r"Exceeds the limit \(4300 digits\) for integer string conversion|"
                     r"RecursionError: maximum recursion depth exceeded")


# mutations of the default refused at each stage after the file is read (schema, servers, plan,
# places, credentials, the bar): the same code under Snakemake as under knee validate-config,
# which every case goes through; under Snakemake these, and every case written as text (what
# Snakemake's own loader may read differently), run in both forms
STAGES = {"args-host", "args-abbrev-host", "env-hf-token", "token-in-question",
          "cache-dir-var-log", "fixture-class-missing",
          "rule-point-unmeasured"}


def test_every_case_is_refused_by_validate_config(tmp_path, capsys):
    from knee import cli

    for case in CASES:
        path = tmp_path / f"{case.id}.yaml"
        path.write_bytes(case.file(f"hostile-{case.id}"))
        assert cli.main(["validate-config", *["--here"] * case.here, str(path)]) == 1, case.id
        err = capsys.readouterr().err
        assert re.search(case.expect, err) and str(path) in err, f"{case.id}: {err}"


def every_refuses(case, folder) -> list[str]:
    """How `snakemake -n --config experiment=` and `snakemake -n --configfile` fail to refuse
    one case (none: []). Snakemake's own loader reads a --configfile file before any workflow
    code: a file that is not UTF-8 is refused by it, in its words, so those cases
    (SNAKEMAKE_LOADER) are held to its message there."""
    path = folder / f"{case.id}.yaml"
    path.write_bytes(case.file(f"hostile-{case.id}-{uuid.uuid4().hex[:6]}"))
    wrong = []
    argvs = [[*SNAKEMAKE, "--config", f"experiment={path}"],
             [*SNAKEMAKE, "--configfile", str(path)]]
    for argv in argvs:
        theirs = case.id in SNAKEMAKE_LOADER and "--configfile" in argv
        what, out = problem(argv, SNAKEMAKE_REFUSAL if theirs else case.expect)
        if what == "traceback" and theirs and case.id in SNAKEMAKE_TRACEBACK:
            what = None  # Snakemake's own, before any workflow code
        if what is None and not theirs and str(path) not in out:
            what = "the message does not name the file"
        if what:
            wrong.append(f"{case.id} ({' '.join(argv[2:5])}): {what}\n{out[-1500:]}")
    return wrong


@pytest.mark.workflow
def test_snakemake_refuses_in_both_forms(tmp_path):
    """Both forms on the text cases and one case of each stage (two at a time: each is a
    Python start and a parse)."""
    cases = [c for c in CASES if not c.here and (isinstance(c.change, (str, bytes))
                                                 or c.id in STAGES)]
    assert {c.id for c in cases} >= STAGES and len(cases) >= 25
    before = written()
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        wrong = [w for ws in pool.map(lambda c: every_refuses(c, tmp_path), cases) for w in ws]
    assert not wrong, "\n\n".join(wrong)
    assert written() == before
    assert not engine_processes(ROOT)


@pytest.mark.parametrize("case", COMMAND_LINE, ids=lambda c: c[0])
@pytest.mark.workflow
def test_refused_on_the_command_line(case):
    _, argv, expect = case
    before = written()
    refused([*SNAKEMAKE, *argv], expect)
    assert written() == before


@pytest.mark.workflow
def test_a_template_is_never_evaluated(tmp_path):
    """YTE code in an experiment file does not run under the documented command."""
    marker = tmp_path / "ran"
    path = tmp_path / "yte.yaml"
    path.write_text(f"__use_yte__: true\nname: ?__import__('pathlib').Path('{marker}').touch()\n")
    refused([*SNAKEMAKE, "--config", f"experiment={path}"], r"__use_yte__")
    refused([sys.executable, "-m", "knee", "validate-config", str(path)], r"__use_yte__")
    assert not marker.exists()
    # under --configfile Snakemake renders the template before any workflow code runs (the
    # hazard the message names); knee still refuses the file
    out = refused([*SNAKEMAKE, "--configfile", str(path)], r"__use_yte__: .*Snakemake renders "
                  r"such a file .*knee validate-config")
    assert str(path) in out


@pytest.mark.workflow
def test_a_measured_folder_keeps_its_plan(tmp_path):
    """The published example's plan is what its sessions ran under: the workflow has no rule
    that would make it again, and another config under its name is refused with the keys that
    differ."""
    out = refused([*SNAKEMAKE, "--config", "experiment=config/ksched.yaml", "name=ksched-cpu"],
                  r"never re-planned")
    assert "arms.candidate.args.max-model-len: measured=2048 now=1048576" in out
    r = subprocess.run([*SNAKEMAKE, "--configfile", "config/ksched-cpu.yaml"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "rule plan:" not in r.stdout + r.stderr
    plan = ROOT / "results" / "ksched-cpu" / "plan.json"
    mtime = plan.stat().st_mtime
    with pytest.raises(KneeError, match="never re-plans a measured experiment"):
        cfg = config.load(ROOT / "config" / "config.yaml")
        cfg["bar"]["alpha"] = 0.1
        planfile.write_plan(plan, config.make_plan(cfg))
    assert plan.stat().st_mtime == mtime


def test_make_run_names_results_after_the_config():
    r = subprocess.run(["make", "-n", "run", "CONFIG=config/aa-cpu.yaml"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "MAKEFLAGS": ""})
    assert "--configfile config/aa-cpu.yaml --config name=aa-cpu-local" in r.stdout, r.stdout


@pytest.mark.workflow
def test_an_experiment_may_share_a_name_with_the_snakefile(tmp_path):
    """An experiment called `workflow` in an experiments list is an experiment like any other
    (its module is not named after it, so it shadows nothing)."""
    text = (ROOT / "config" / "config.yaml").read_text().replace("name: ksched-cpu-greedy",
                                                                 "name: workflow")
    path = tmp_path / "workflow.yaml"
    path.write_text(text)
    r = subprocess.run([*SNAKEMAKE, "--config", f"experiments=[{path}]"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "workflow_session" in r.stdout and not (ROOT / "results" / "workflow").exists()
    listing = tmp_path / "list.yaml"  # the same list, as a file of its own
    listing.write_text(f"experiments: [{path}]\n")
    r = subprocess.run([*SNAKEMAKE, "--config", f"experiment={listing}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "workflow_session" in r.stdout, r.stderr[-2000:]


@pytest.mark.workflow
def test_no_config_can_switch_knees_reader_off(tmp_path):
    """Whether the workflow runs as a campaign's module is Snakemake's namespace, not a key: a
    file (or a --config argument) claiming to be one is read by knee like any other, so its
    duplicate key and the claim itself are refused."""
    text = (ROOT / "config" / "config.yaml").read_text()
    path = tmp_path / "module.yaml"
    path.write_text(f"knee_source: {path}\n{text}pairs: 1\npairs: 2\n")
    out = refused([*SNAKEMAKE, "--configfile", str(path)], r"knee_source|duplicate")
    assert str(path) in out
    refused([*SNAKEMAKE, "--config", f"knee_source={path}"],
            r"--config knee_source=.*not a command-line setting")


@pytest.mark.workflow
def test_a_results_folder_that_links_out_of_the_tree_is_never_written_through(tmp_path):
    name = f"hostile-link-{uuid.uuid4().hex[:6]}"
    link = ROOT / "results" / name
    link.symlink_to(tmp_path)
    try:
        out = refused([*SNAKEMAKE, "--config", "experiment=config/config.yaml", f"name={name}"],
                      rf"results/{name} is a symbolic link to .*outside")
        assert "never through a link" in out
        assert list(tmp_path.iterdir()) == []
    finally:
        link.unlink()
