"""make lint's ruff configuration catches the bug class that once published a literal
`{RESAMPLES}` in every recommendation: a string with a placeholder but no f prefix."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ruff():
    found = Path(sys.executable).with_name("ruff")
    return str(found) if found.exists() else shutil.which("ruff")


@pytest.mark.skipif(ruff() is None, reason="ruff is not installed (make venv installs it)")
def test_a_placeholder_without_an_f_prefix_fails_the_projects_lint(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('RESAMPLES = 2000\nMETHOD = ("Intervals: "\n'
                       '          "{RESAMPLES} resamples of the boot pairs")\n',
                       encoding="utf-8")
    fixed = tmp_path / "fixed.py"
    fixed.write_text(planted.read_text(encoding="utf-8").replace('"{RES', 'f"{RES'),
                     encoding="utf-8")
    args = [ruff(), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
            "--output-format", "json"]
    found = subprocess.run([*args, str(planted)], capture_output=True, text=True)
    codes = [f["code"] for f in json.loads(found.stdout)]
    assert found.returncode == 1 and codes == ["RUF027"], found.stdout + found.stderr
    clean = subprocess.run([*args, str(fixed)], capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout + clean.stderr


def tool(name):
    found = Path(sys.executable).with_name(name)
    return str(found) if found.exists() else shutil.which(name)


@pytest.mark.skipif(tool("mypy") is None, reason="mypy is not installed (make venv installs it)")
def test_the_type_checker_is_strict_in_every_layer(tmp_path):
    """A function without annotations, planted in a copy of the package, fails make lint's mypy
    in every layer and in the command line."""
    package = tmp_path / "workflow" / "knee"
    shutil.copytree(ROOT / "workflow" / "knee", package,
                    ignore=shutil.ignore_patterns("__pycache__", ".mypy_cache"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = ["core/jsonio.py", "instruments/spec.py", "analyze/stats.py", "plan/summary.py",
               "publish/mdtext.py", "measure/host/speed.py", "measure/runtime/docker.py", "cli.py",
               "commands/spec.py", "commands/analyze/compare.py"]
    for rel in planted:
        with (package / rel).open("a", encoding="utf-8") as f:
            f.write("\n\ndef planted(value):\n    return value\n")
    found = subprocess.run([tool("mypy"), "--cache-dir", str(tmp_path / "cache")],
                           cwd=tmp_path, capture_output=True, text=True)
    flagged = sorted({line.split(":")[0].removeprefix("workflow/knee/")
                      for line in found.stdout.splitlines() if ": error:" in line})
    assert found.returncode == 1, found.stdout + found.stderr
    assert flagged == sorted(planted), found.stdout
