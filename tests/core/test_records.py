"""Each record type says what its kind of file holds: every key its schema names or requires,
the schema's required keys Required, and every key of every published file of that kind."""

import json
from typing import get_type_hints

import pytest

from knee.core import jsonio, records
from knee.core.records import calibration, sampling
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


def published() -> dict[str, list[dict]]:
    """Every JSON file under results/ and config/ with a knee schema, by kind."""
    found: dict[str, list[dict]] = {}
    paths = [*(ROOT / "results").glob("**/*.json"), *(ROOT / "config").glob("**/*.json")]
    for path in sorted(paths):
        data = json.loads(jsonio.read_text(path))
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
