"""Tidy tables: comparison rows as CSV, every request as Parquet; documented, audited."""

import re

import pandas as pd
import pytest

from knee.analyze import folder
from knee.core import jsonio
from knee.publish import audit, tables
from tests.helpers import ROOT

EXAMPLE = ROOT / "results" / "ksched-cpu"


def test_the_published_tables_hold_every_row_and_every_request():
    rows = pd.read_csv(EXAMPLE / "comparison" / "rows.csv")
    requests = pd.read_parquet(EXAMPLE / "raw" / "requests.parquet")
    comparison = jsonio.read(EXAMPLE / "comparison" / "comparison.json", "comparison")
    assert list(rows.columns) == list(tables.ROW_COLUMNS)
    assert len(rows) == len(comparison["rows"])
    over_pairs = rows[(rows.pair == "all") & (rows.instrument == "sweep") & (rows.point == "16")
                      & (rows.metric == "throughput")].iloc[0]
    stored = next(r for r in comparison["rows"] if r["pair"] == "all" and r["point"] == 16
                  and r["instrument"] == "sweep" and r["metric"] == "throughput")
    assert over_pairs.interval_low == pytest.approx(stored["interval"][0], rel=1e-12)
    assert over_pairs.pairs == 3 and len(over_pairs.per_pair_delta_pct.split(";")) == 3
    plan = jsonio.read(EXAMPLE / "plan.json", "plan")
    sessions = folder.load_sessions(plan, EXAMPLE)
    records = sum(len(p["records"]) for s in sessions.values() for raw in s["raw"].values()
                  for p in raw["points"])
    assert len(requests) == records and list(requests.columns) == list(tables.REQUEST_COLUMNS)
    assert set(requests.session) == {f"{p}-{a}" for p in (1, 2, 3)
                                     for a in ("control", "candidate")}
    ok = requests[requests.error.isna() & ~requests.warmup]
    assert (ok.decode_rate > 0).all() and (ok.ttft_s > 0).all()


def test_every_column_is_documented():
    text = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_0-9]+)` \| (?!`)", text, re.M))
    assert set(tables.ROW_COLUMNS) | set(tables.REQUEST_COLUMNS) <= documented


def test_a_changed_table_is_named_by_the_audit(results):
    csv = results / "comparison" / "rows.csv"
    lines = csv.read_text().splitlines()
    lines[5] += "0"
    csv.write_text("\n".join(lines) + "\n")
    frame = pd.read_parquet(results / "raw" / "requests.parquet")
    frame.loc[7, "output_tokens"] += 1
    frame.to_parquet(results / "raw" / "requests.parquet", index=False)
    problems = "\n".join(audit.audit(results))
    assert "comparison/rows.csv:6: differs from comparison.json" in problems
    assert "raw/requests.parquet: row 7 (" in problems and "column output_tokens" in problems
    (results / "raw" / "requests.parquet").unlink()
    assert "raw/requests.parquet: missing" in "\n".join(audit.audit(results))
