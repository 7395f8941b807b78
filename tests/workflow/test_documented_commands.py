"""Every `knee` and `snakemake` command line shown in README.md and docs/ runs here, on a CPU
machine, as a reader would paste it: placeholders (config/X.yaml, my.yaml, results/NAME) are
given real files; a Snakemake command runs as a dry run (-n), which plans every session and
checks the config, and never writes into a published folder (a report goes to a temporary
file); a `knee` command that writes gets a temporary path. A
number a `knee trace` example names must still be in the README it traces."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.workflow

TEXTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# what a placeholder stands for here: committed configs and a published folder
PLACEHOLDERS = {"config/X.yaml": "config/ksched-h200.yaml", "my.yaml": "config/config.yaml",
                "results/NAME": "results/ksched-cpu", "config/a.yaml": "config/k7v4.yaml",
                "config/b.yaml": "config/k4-off.yaml"}


def examples() -> list[tuple[str, str]]:
    """(where, command line) for each knee or snakemake line of a fenced block, its comment
    removed."""
    out = []
    for path in TEXTS:
        for block in re.findall(r"```[a-z]*\n(.*?)```", path.read_text(), re.S):
            for line in block.splitlines():
                line = re.sub(r"\s+#.*$", "", line).strip()
                if re.match(r"(knee|snakemake) ", line):
                    out.append((path.relative_to(ROOT).as_posix(), line))
    return out


def runnable(line: str, tmp) -> list[str]:
    for name, real in PLACEHOLDERS.items():
        line = re.sub(rf"(?<![\w/.-]){re.escape(name)}(?![\w.-])", real, line)
    argv = shlex.split(line)
    if argv[0] == "knee":
        argv = [sys.executable, "-m", "knee", *argv[1:]]
        if "--out" in argv:
            argv[argv.index("--out") + 1] = str(tmp / "calibration.json")
        if "--calibration" in argv:
            argv[argv.index("--calibration") + 1] = str(tmp / "calibration.json")
        return argv
    argv = [sys.executable, "-m", "snakemake", *argv[1:]]
    if "--report" in argv:  # the report is written for real, into the temporary folder
        argv[argv.index("--report") + 1] = str(tmp / "report.html")
    elif "-n" not in argv:  # measuring, or re-rendering a published folder: planned only
        argv.insert(3, "-n")
    if "--cores" not in argv and "--profile" not in argv:
        argv += ["--cores", "1"]
    return argv


def test_the_documents_show_the_commands_a_reader_runs():
    lines = [line for _, line in examples()]
    assert len(lines) >= 20
    assert any(line.startswith("knee trace ") for line in lines)
    assert any(line.startswith("knee audit ") for line in lines)


@pytest.mark.parametrize("where, line", sorted(set(examples())), ids=lambda x: str(x)[:60])
def test_a_documented_command_runs(where, line, tmp_path):
    if line.startswith("knee design --calibration"):  # reads what `knee calibrate` writes
        calibrate = next(c for _, c in examples() if c.startswith("knee calibrate"))
        subprocess.run(runnable(calibrate, tmp_path), cwd=ROOT, check=True,
                       capture_output=True, timeout=600)
    argv = runnable(line, tmp_path)
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    said = (r.stdout + r.stderr)[-3000:]
    assert r.returncode == 0, f"{where}: {line}\n{shlex.join(argv)}\n{said}"


CONFIGS = sorted(p.name for p in (ROOT / "config").glob("*.yaml"))


def validate_and_plan(config: str) -> tuple[subprocess.CompletedProcess, ...]:
    """`knee validate-config` and a dry run of one committed config, under a name no folder
    holds (every session would boot)."""
    path = f"config/{config}"
    checked = subprocess.run([sys.executable, "-m", "knee", "validate-config", path], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    planned = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                              "--configfile", path, "--config",
                              f"name=plan-check-{config.removesuffix('.yaml')}"],
                             cwd=ROOT, capture_output=True, text=True, timeout=600)
    return checked, planned


@pytest.fixture(scope="module")
def every_config_planned() -> dict:
    """Every committed config checked and planned, as many at a time as there are CPUs (each
    is two Python starts and a parse; a dry run takes no lock)."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        return dict(zip(CONFIGS, pool.map(validate_and_plan, CONFIGS), strict=True))


@pytest.mark.parametrize("config", CONFIGS)
def test_every_committed_config_validates_and_plans_here(config, every_config_planned):
    """GPU hosts' configs too: under a name no folder holds, every session would boot, and
    both checks pass on this CPU machine (the engine CPUs, Python and GPUs are the booting
    machine's, checked there)."""
    checked, planned = every_config_planned[config]
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert planned.returncode == 0, (planned.stdout + planned.stderr)[-3000:]
    assert "rule session:" in planned.stdout or "rule session_pair:" in planned.stdout, \
        planned.stdout[-2000:]
