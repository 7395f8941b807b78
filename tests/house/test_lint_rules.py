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
