"""Each record type says what its kind of file holds: every key its schema names or requires,
the schema's required keys Required, and every key of every published file of that kind."""

import functools
import json
import types
from typing import Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from knee.core import jsonio, records
from knee.core.records import calibration, sampling, verdict
from tests.helpers import ROOT

NESTED = {  # a record's list of records: (key, its record type)
    "raw": ("points", records.RawWindow),
    "comparison": ("rows", records.ComparisonRow),
    "bar": ("rules", records.RuleVerdict),
    "calibration": ("figures", calibration.Figure),
}
# a record's sections with records of their own: (where the schema describes the section, the
# section's record)
SECTIONS = [
    ("config", ("properties", "bar", "properties", "rules", "items"), records.BarRule),
    ("bar", ("properties", "rules", "items", "properties", "per_pair", "items"),
     verdict.PairEffect),
    ("calibration", ("properties", "facts"), calibration.Facts),
    ("calibration", ("properties", "figures", "items"), calibration.Figure),
    ("calibration", ("properties", "figures", "items", "properties", "left_out"),
     calibration.LeftOut),
    ("calibration", ("properties", "figures", "items", "properties", "runs"),
     calibration.RunComponents),
    ("calibration", ("properties", "costs"), calibration.Costs),
    ("calibration", ("$defs", "withheld", "items"), calibration.Withheld),
    ("calibration", ("properties", "folders", "items"), calibration.FolderBoots),
]


@functools.cache
def published() -> dict[str, list[dict]]:
    """Every JSON file under results/ (compressed raw files too) and config/ with a knee schema,
    by kind."""
    found: dict[str, list[dict]] = {}
    paths = [*(ROOT / "results").glob("**/*.json"), *(ROOT / "results").glob("**/*.json.gz"),
             *(ROOT / "config").glob("**/*.json")]
    for path in sorted(paths):
        data = json.loads(jsonio.read_text(path))  # a .gz file expanded
        if isinstance(data, dict) and str(data.get("schema", "")).startswith("knee/"):
            found.setdefault(data["schema"].removeprefix("knee/"), []).append(data)
    return found


def undeclared(record: type, data: list[dict]) -> set[str]:
    return {k for d in data for k in d} - set(get_type_hints(record))


@pytest.mark.parametrize("kind", sorted(records.RECORDS))
def test_a_record_holds_what_its_schema_names(kind):
    record = records.RECORDS[kind]
    schema = jsonio.schema_file(kind)
    assert set(schema.get("properties", {})) <= set(get_type_hints(record))
    # the stamp is jsonio.write's: a record as the code builds it has the rest
    assert set(schema["required"]) - {"schema", "schema_version"} == set(
        record.__required_keys__)


@pytest.mark.parametrize(("kind", "where", "record"), SECTIONS,
                         ids=[f"{k}:{'/'.join(w)}" for k, w, _ in SECTIONS])
def test_a_sections_record_holds_what_its_schema_names(kind, where, record):
    section = jsonio.schema_file(kind)
    for key in where:
        section = section[key]
    assert set(section["properties"]) == set(get_type_hints(record))
    assert set(section.get("required", [])) == set(record.__required_keys__)


def test_a_record_holds_every_key_of_every_published_file():
    files = published()
    assert set(records.RECORDS) <= set(files)
    for kind, record in records.RECORDS.items():
        assert not undeclared(record, files[kind]), (kind, undeclared(record, files[kind]))
        if kind in NESTED:
            key, inner = NESTED[kind]
            items = [x for d in files[kind] for x in d[key]]
            assert items and not undeclared(inner, items), (kind, undeclared(inner, items))


def test_a_key_no_record_declares_is_found():
    assert undeclared(records.StopReceipt, [{"schema": "knee/stop", "stopped_in": 1}]) == {
        "stopped_in"}


def test_a_sampling_check_record_holds_every_key_of_every_published_receipt():
    checks = [c for b in published()["boot"] for c in b.get("sampling_check") or []]
    requests = [r for c in checks for r in c.get("records") or []]
    assert checks and requests
    assert not undeclared(sampling.SamplingCheck, checks)
    assert not undeclared(sampling.SampledRequest, requests)


def undeclared_within(hint, value, path: str) -> list[str]:
    """Every key of `value`, at any depth, that the record type `hint` leaves undeclared:
    a typed section's keys against its record, a list's items and a mapping's values against
    theirs."""
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return []
        hints = get_type_hints(hint)
        out = [f"{path}.{k}" for k in value if k not in hints]
        for k, v in value.items():
            out += undeclared_within(hints[k], v, f"{path}.{k}") if k in hints else []
        return out
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        found = [undeclared_within(a, value, path) for a in args]
        return min(found, key=len)
    if origin is list and isinstance(value, list):
        return [k for item in value for k in undeclared_within(args[0], item, f"{path}[]")]
    if origin is dict and isinstance(value, dict):
        return [k for v in value.values() for k in undeclared_within(args[1], v, f"{path}{{}}")]
    return []


def test_every_typed_section_holds_every_key_of_every_published_file():
    files = published()
    for kind, record in records.RECORDS.items():
        missing = sorted({k for d in files[kind] for k in undeclared_within(record, d, kind)})
        assert not missing, missing


def test_a_key_a_typed_section_lacks_is_found_at_its_depth():
    rule = {"rule": "r", "instrument": "sweep", "metric": "throughput", "point": 8,
            "verdict": "PASS", "test": "t", "adjustment": {
                "covariate": "host_speed", "slope": 0.1, "tolerance_pct": 1.0,
                "applied": True, "balance": {"estimate_pct": 0.1, "interval": None, "extra": 1}}}
    assert undeclared_within(records.BarVerdict, {"rules": [rule]}, "bar") == [
        "bar.rules[].adjustment.balance.extra"]
