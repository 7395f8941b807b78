"""Tidy tables of a results folder, for a notebook: the comparison's rows as CSV and every
request of every window as Parquet (pandas). Derived from files only; columns in COLUMNS."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from knee.analyze import stats
from knee.analyze.folder import Sessions
from knee.core import jsonio, layout, metrics
from knee.core.errors import KneeError

# every column, what it holds (docs/config.md shows this table; a test checks they agree)
ROW_COLUMNS = {
    "instrument": "the instrument of the row",
    "point": "its point: a concurrency, a class, a depth, a temperature (as text), or all",
    "pair": "the boot pair (1, 2, ...) or all (the effect over boot pairs)",
    "metric": metrics.words(),
    "control": "the control's figure (over pairs: the mean of the pairs' figures)",
    "candidate": "the candidate's figure, the same way",
    "delta_pct": "the effect in % (over pairs: the mean of the per-pair log ratios)",
    "interval_low": "the interval's lower bound, % (empty when there is none)",
    "interval_high": "its upper bound, %",
    "interval_level": "what the interval resampled: boot pairs, or requests within one pair",
    "confidence": "the interval's confidence level",
    "pairs": "how many pairs the interval over pairs used (empty for a per-pair row)",
    "per_pair_delta_pct": "each pair's own effect in %, separated by ';' (rows over pairs)",
    "noise_pct": "the larger of the run-to-run and boot-to-boot spread at the point, %",
    "noise": "the row's noise label, as in the README",
}
REQUEST_COLUMNS = {
    "session": "the session id (P-ARM)",
    "pair": "its boot pair",
    "arm": "control or candidate",
    "instrument": "the instrument window",
    "point": "the point (as text)",
    "run": "the run of the point",
    "index": "the request's index in its point",
    "warmup": "a warm-up request, outside every figure",
    "prompt_tokens": "prompt tokens, as the server counted them",
    "output_tokens": "output tokens",
    "chunks": "stream chunks that carried tokens",
    "t_send": "send time, s from the window's start",
    "t_first": "first token's arrival, s",
    "t_last": "last token's arrival, s",
    "t_done": "end of the stream, s",
    "ttft_s": "t_first - t_send",
    "decode_rate": "(output tokens - 1) / (t_last - t_first), tok/s",
    "finish_reason": "the server's finish reason",
    "error": "the error, empty when the request succeeded",
}


def comparison_rows(comparison: Mapping[str, Any]) -> pd.DataFrame:
    """One row per instrument, point, pair and metric, every field of comparison.json."""
    rows = []
    for r in comparison["rows"]:
        interval = r.get("interval") or [None, None]
        per_pair = r.get("per_pair_delta_pct")
        rows.append({
            **{k: r.get(k) for k in ROW_COLUMNS}, "point": str(r["point"]),
            "pair": str(r["pair"]), "interval_low": interval[0], "interval_high": interval[1],
            "pairs": r.get("pairs"),
            "per_pair_delta_pct": None if per_pair is None else ";".join(
                "" if x is None else repr(x) for x in per_pair)})
    return pd.DataFrame(rows, columns=list(ROW_COLUMNS)).astype({"pairs": "Int64"})


def request_rows(sessions: Sessions) -> pd.DataFrame:
    """One row per request of every instrument window (knee.analyze.folder.load_sessions)."""
    rows = []
    for (pair, arm), s in sorted(sessions.items()):
        for inst, raw in s["raw"].items():
            for p in raw["points"]:
                for rec in p["records"]:
                    rows.append({
                        "session": raw["session"], "pair": pair, "arm": arm,
                        "instrument": inst, "point": str(p["point"]), "run": p["run"],
                        **{k: rec.get(k) for k in ("index", "warmup", "prompt_tokens",
                                                   "output_tokens")},
                        "chunks": len(rec.get("chunk_times") or []),
                        **{k: rec.get(k) for k in ("t_send", "t_first", "t_last", "t_done")},
                        "ttft_s": stats.ttft(rec), "decode_rate": stats.decode_rate(rec),
                        "finish_reason": rec.get("finish_reason"), "error": rec.get("error")})
    return pd.DataFrame(rows, columns=list(REQUEST_COLUMNS)).astype(
        {"prompt_tokens": "Int64", "output_tokens": "Int64", "ttft_s": "float64",
         "decode_rate": "float64", "t_first": "float64", "t_last": "float64",
         "t_done": "float64", "finish_reason": "string", "error": "string"})


def csv_text(frame: pd.DataFrame) -> str:
    csv: str = frame.to_csv(index=False, lineterminator="\n")
    return csv


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, engine="pyarrow")
    return buffer.getvalue()


def write(frame: pd.DataFrame, path: Path) -> None:
    """CSV or Parquet by the suffix, written atomically."""
    path = Path(path)
    jsonio.atomic_write_text(path, csv_text(frame) if path.suffix == ".csv"
                             else parquet_bytes(frame))


def check(root: Path, comparison: Mapping[str, Any], sessions: Sessions) -> list[str]:
    """The stored tables against tables made anew from comparison.json and the raw files
    (Parquet compared as read back, so another pyarrow's byte layout is no difference)."""
    problems = []
    rows, requests = Path(root) / layout.ROWS, Path(root) / layout.REQUESTS
    if not rows.is_file():
        problems.append(f"{layout.ROWS}: missing (re-render: knee tables)")
    else:
        fresh = csv_text(comparison_rows(comparison)).splitlines()
        try:
            stored = jsonio.read_text(rows).splitlines()
        except KneeError as e:
            return [*problems, f"{layout.ROWS}: {e}"]
        bad = [n for n, (a, b) in enumerate(zip(stored, fresh, strict=False), 1) if a != b]
        if bad or len(stored) != len(fresh):
            line = bad[0] if bad else min(len(stored), len(fresh)) + 1
            problems.append(f"{layout.ROWS}:{line}: differs from comparison.json")
    if not requests.is_file():
        return [*problems, f"{layout.REQUESTS}: missing (re-render: knee tables)"]
    fresh = pd.read_parquet(io.BytesIO(parquet_bytes(request_rows(sessions))))
    try:
        stored = pd.read_parquet(io.BytesIO(jsonio.read_bytes(requests)))
    except (KneeError, OSError, ValueError) as e:  # pyarrow's errors are OSError/ValueError
        return [*problems, f"{layout.REQUESTS}: not a Parquet file knee can read "
                           f"({str(e)[:200]})"]
    if list(stored.columns) != list(fresh.columns) or len(stored) != len(fresh):
        return [*problems, f"{layout.REQUESTS}: {len(stored)} rows x {list(stored.columns)}"
                           f" != {len(fresh)} x {list(fresh.columns)} from the raw files"]
    for column in fresh.columns:
        both_missing = stored[column].isna() & fresh[column].isna()
        same = stored[column].eq(fresh[column]).fillna(False).astype(bool) | both_missing
        if not same.all():
            row = int((~same).to_numpy().nonzero()[0][0])
            problems.append(f"{layout.REQUESTS}: row {row} ({fresh['session'][row]} "
                            f"{fresh['instrument'][row]} point {fresh['point'][row]}) column "
                            f"{column} differs from the raw files")
    return problems
