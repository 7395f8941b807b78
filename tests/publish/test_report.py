"""The published example re-renders byte-identical with no boot, and Snakemake's report of it
holds the verdict, the comparison table, every figure with its caption and the tidy table."""

import base64
import re
import subprocess
import sys

import pytest

from knee.core import jsonio
from tests.helpers import ROOT, run_snakemake

EXPERIMENT = ["--config", "experiment=config/ksched-cpu.yaml"]
PUBLISHED = ROOT / "results" / "ksched-cpu"


@pytest.mark.workflow
def test_the_published_example_rerenders_identically_and_reports(tmp_path):
    r = run_snakemake(*EXPERIMENT, cores=2, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "rule session:" not in r.stderr  # nothing booted
    changed = subprocess.run(["git", "status", "--porcelain", "--", str(PUBLISHED)], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    assert changed == "", changed  # every derived file the same bytes as published
    report = tmp_path / "report.html"
    r = subprocess.run([sys.executable, "-m", "snakemake", "--report", str(report), *EXPERIMENT],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    html = report.read_text()
    for name in ("throughput", "ttft", "acceptance", "fixture", "depth"):
        assert f'"filename": "{name}.png"' in html
    assert "Output throughput (tokens/s) per closed-loop concurrency point" in html  # a caption
    assert '"filename": "rows.csv"' in html and "knee: a paired speculative-decoding" in html
    embedded = re.search(r'"results/ksched-cpu/comparison/verdict.html".*?'
                         r'"data:text/html;[^"]*?base64,([A-Za-z0-9+/=]+)"', html, re.S)
    verdict = base64.b64decode(embedded.group(1)).decode()
    bar = jsonio.read(PUBLISHED / "comparison" / "bar.json", "bar")
    assert f'Bar: <b class="{bar["verdict"]}">{bar["verdict"]}</b>' in verdict
    for rule in bar["rules"]:
        assert f"<td>{rule['rule']}</td><td class=\"{rule['verdict']}\">" in verdict
    rows = jsonio.read(PUBLISHED / "comparison" / "comparison.json", "comparison")["rows"]
    assert verdict.count("<tr><td>") == len(bar["rules"]) + len(rows)
