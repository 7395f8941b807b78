"""Every JSON file knee writes: stamped with its schema, validated, written atomically."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import stat
import tempfile
import zlib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal, overload

import jsonschema
import yaml

from knee.core.errors import KneeError
from knee.core.records import (
    BarVerdict,
    BootReceipt,
    Comparison,
    Plan,
    RawFile,
    Recommendation,
    StopReceipt,
    WindowMetrics,
)

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
# a file knee reads is at most this big as stored, and a compressed one at most READ_LIMIT
# once expanded: a link to /dev/zero or a bomb is refused, not read until memory runs out
READ_LIMIT = 256 << 20  # a file knee reads, expanded: a raw file of an H200 sweep is 4 MB
COMPRESSED = ".gz"  # a name ending so is gzip: written compressed, read expanded
# what an older version of a file lacks, and how to make it anew from the raw files
REDERIVE = {
    "plan": "the realized order and the bar's alpha; a measured experiment is never "
            "re-planned: measure it again under a new name",
    "comparison": "intervals over boot pairs; re-derive with `snakemake --cores 1 "
                  "--config experiment=CONFIG --forcerun compare` (boots nothing)",
    "bar": "three-valued verdicts decided on an interval; re-derive with `snakemake --cores 1 "
           "--config experiment=CONFIG --forcerun compare` (boots nothing)",
}


# a document of one kind held inside a file of another, validated as its own kind where it is
# read: a plan embeds the calibration its bar registers (bar.adjust)
EMBEDDED = {"plan": ((("calibration", "document"), "calibration"),)}


@cache
def schema_file(kind: str) -> dict[str, Any]:
    """A schema as its file holds it, as knee validates a file with it (the config's, with
    its instruments' sections, is knee.instruments.config_schema); never changed in place."""
    path = SCHEMA_DIR / f"{kind}.schema.yaml"
    if not path.is_file():
        raise KneeError(f"no schema named {kind!r} in {SCHEMA_DIR}")
    schema: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return schema


def _is_integer(_checker: object, value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(_checker: object, value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


# JSON Schema counts 2.0 as an integer and lets inf and nan through as numbers: knee does not
# (a float where a count is meant, or a non-finite bound, is refused with its key path)
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}))


def config_default(dotted: str) -> Any:
    """A config key's default outside the instruments' sections, from the config schema (the
    one place defaults live)."""
    node = schema_file("config")
    for part in dotted.split("."):
        node = node["properties"][part]
    return node["default"]


def where(error: jsonschema.ValidationError) -> str:
    parts = ""
    for p in error.absolute_path:
        parts += f"[{p}]" if isinstance(p, int) else (f".{p}" if parts else str(p))
    return parts or "(top level)"


def form_name(form: dict[str, Any]) -> str:
    """How one alternative of a oneOf reads: its type(s), or its allowed values."""
    if "type" not in form:
        return f"one of {form['enum']!r}"
    return form["type"] if isinstance(form["type"], str) else " or ".join(form["type"])


def explain(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For a value that fits none of several forms (oneOf), the reason from the form whose
    type it has: `pairs: 0 is less than the minimum of 1`, not `not valid under any`."""
    if error.validator not in ("oneOf", "anyOf"):
        return error
    forms = error.validator_value
    if all(set(f) == {"required"} for f in forms):  # exactly one of several keys
        keys = " or ".join(k for f in forms for k in f["required"])
        error.message = (f"give exactly one of {keys}, not both" if "each of" in error.message
                         else f"give one of {keys}")
        return error
    # the form the value has (its own type fits): an error inside it, or on its value
    typed = [c for c in error.context
             if c.validator != "type" or len(c.absolute_path) > len(error.absolute_path)]
    mistyped = {c.relative_schema_path[0] for c in error.context
                if c.validator == "type" and len(c.absolute_path) == len(error.absolute_path)}
    fitting = [c for c in typed if "type" in forms[c.relative_schema_path[0]]
               and c.relative_schema_path[0] not in mistyped]
    typed = fitting or typed
    if typed:
        return explain(max(typed, key=lambda c: len(c.absolute_path)))
    types = [form_name(f) for f in forms if "type" in f or "enum" in f]
    if types:
        error.message = f"{error.instance!r} is not {' or '.join(types)}"
    return error


def check(kind: str, data: Any, source: str, schema: dict[str, Any] | None = None) -> None:
    """Validate data against a schema (kind's file, or the schema given); raise KneeError
    naming source, key path and reason."""
    schema = schema_file(kind) if schema is None else schema
    validator = Validator(schema)
    errors = sorted(map(explain, validator.iter_errors(data)),
                    key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{source}: {where(e)}: {e.message}" for e in errors[:20]]
        raise KneeError("invalid " + kind + ":\n  " + "\n  ".join(lines))


def sha256_file(path: Path | str) -> str:
    """A file's sha256, read in blocks (no whole-file read)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_write_text(path: Path, text: str | bytes) -> None:
    """Text (or bytes) to a temporary name beside the file, synced, then renamed over it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_bytes(path: Path | str, limit: int = READ_LIMIT) -> bytes:
    """A regular file's bytes (expanded when its name ends in .gz), refused before it is
    opened when it is not a regular file, and refused past `limit` bytes."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise KneeError(f"{path}: missing") from None
    if not stat.S_ISREG(info.st_mode):
        raise KneeError(f"{path}: not a regular file (a directory, device or pipe): refused")
    if info.st_size > limit:
        raise KneeError(f"{path}: {info.st_size} bytes, over the {limit} a file may hold")
    with open(path, "rb") as f:  # its size and a byte more: a file that grew is still caught
        data = f.read(info.st_size + 1)
        if len(data) > info.st_size:
            data += f.read(limit + 1 - len(data))
    if path.name.endswith(COMPRESSED):
        try:
            expand = zlib.decompressobj(wbits=31)
            data = expand.decompress(data, limit + 1)
        except zlib.error as e:
            raise KneeError(f"{path}: not gzip ({e})") from None
        if len(data) > limit or expand.unconsumed_tail:
            raise KneeError(f"{path}: expands past the {limit} bytes a file may hold")
    if len(data) > limit:
        raise KneeError(f"{path}: over the {limit} bytes a file may hold")
    return data


def in_folder(root: Path | str, name: str) -> Path:
    """A file named inside a results folder, refused when the name or a link on the way
    leads out of it (../x, an absolute path, a link to /etc or another folder)."""
    top = Path(root).resolve()
    path = (top / name).resolve()
    if path != top and top not in path.parents:
        raise KneeError(f"{Path(root) / name}: leads outside {root} (to {path}): not read")
    return path


def read_text(path: Path | str, limit: int = READ_LIMIT) -> str:
    """read_bytes as UTF-8 text, naming the file when it is not."""
    return decode(read_bytes(path, limit), path)


def decode(data: bytes, path: Path | str) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise KneeError(f"{path}: not UTF-8 text ({e})") from None


def write_text(path: Path | str, text: str) -> None:
    """atomic_write_text, compressed when the name ends in .gz (no timestamp, so the same
    text gives the same bytes)."""
    path = Path(path)
    if path.name.endswith(COMPRESSED):
        atomic_write_text(path, gzip.compress(text.encode(), compresslevel=6, mtime=0))
    else:
        atomic_write_text(path, text)


# a count, a size in bytes or a time in nanoseconds fits; a longer integer is no number knee wrote
INT_DIGITS = 19


def _int(text: str) -> int:
    if (digits := len(text.lstrip("-"))) > INT_DIGITS:
        raise ValueError(f"an integer of {digits} digits: no number knee writes has more than "
                         f"{INT_DIGITS}")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is beyond a float's range")
    return value


def _constant(text: str) -> float:
    raise ValueError(f"{text} is not a number knee writes (JSON has no {text})")


def loads(text: str) -> Any:
    """JSON as knee writes it: no NaN or Infinity, no number beyond a float's range, no
    integer longer than INT_DIGITS (each a ValueError naming it, not a number to overflow on)."""
    return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)


def dumps(data: Any, flat_below: int | None = None) -> str:
    """Indented JSON, keys sorted; with flat_below, each value at that depth on one line with
    no spaces (a boot receipt's sampling records: about half its indented size)."""
    if flat_below is None:
        return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"
    return _nested(data, 0, flat_below) + "\n"


def _nested(value: Any, depth: int, flat_below: int) -> str:
    if depth >= flat_below or not isinstance(value, dict | list) or not value:
        return json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(str(k))}: {_nested(v, depth + 1, flat_below)}"
                 for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    items = [inner + _nested(v, depth + 1, flat_below) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


# kinds whose deep values are flattened: a boot receipt's sampling_check[i].records[j]
FLAT_BELOW = {"boot": 4}


def schema_version(kind: str) -> int:
    """The version of a kind of file this knee writes (its schema's schema_version const)."""
    version: int = schema_file(kind)["properties"]["schema_version"]["const"]
    return version


def write(path: Path | str, kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Stamp payload with schema + schema_version, validate it, and write it atomically."""
    data = {"schema": f"knee/{kind}", "schema_version": schema_version(kind), **payload}
    check(kind, data, str(path))
    write_text(path, dumps(data, FLAT_BELOW.get(kind)))
    return data


@overload
def read(path: Path | str, kind: Literal["plan"]) -> Plan: ...
@overload
def read(path: Path | str, kind: Literal["boot"]) -> BootReceipt: ...
@overload
def read(path: Path | str, kind: Literal["stop"]) -> StopReceipt: ...
@overload
def read(path: Path | str, kind: Literal["raw"]) -> RawFile: ...
@overload
def read(path: Path | str, kind: Literal["metrics"]) -> WindowMetrics: ...
@overload
def read(path: Path | str, kind: Literal["comparison"]) -> Comparison: ...
@overload
def read(path: Path | str, kind: Literal["bar"]) -> BarVerdict: ...
@overload
def read(path: Path | str, kind: Literal["recommendation"]) -> Recommendation: ...
@overload
def read(path: Path | str, kind: str | None = None) -> Any: ...


def read(path: Path | str, kind: str | None = None) -> Any:
    """A JSON file, bounded; given its kind, checked to be that kind of knee file at the version
    this knee reads, validated, and typed as the kind's record (knee.core.records)."""
    return parse(read_text(path), Path(path), kind)


def read_hashed(path: Path | str, kind: str, limit: int) -> tuple[Any, str]:
    """read, of at most `limit` bytes, with the sha256 of the very bytes it parsed (a file
    replaced between a read and a hash cannot register one content under another's sum)."""
    data = read_bytes(path, limit)
    return parse(decode(data, path), Path(path), kind), hashlib.sha256(data).hexdigest()


def parse(text: str, path: Path, kind: str | None) -> Any:
    try:
        data = loads(text)
    except (ValueError, RecursionError) as e:  # ValueError: not JSON, or a number too long
        raise KneeError(f"{path}: not JSON ({str(e)[:200]})") from None
    if kind is not None and not isinstance(data, dict):
        raise KneeError(f"{path}: a JSON {type(data).__name__}, not the object a knee/{kind} "
                        "file is")
    if kind is not None:
        if data.get("schema") != f"knee/{kind}":
            raise KneeError(f"{path}: schema is {data.get('schema')!r}, expected 'knee/{kind}'")
        if data.get("schema_version") != schema_version(kind):
            raise KneeError(f"{path}: knee/{kind} version {data.get('schema_version')!r}, this "
                            f"knee reads version {schema_version(kind)} (it adds "
                            f"{REDERIVE.get(kind, 'fields')})")
        check(kind, data, str(path))
        for keys, inner in EMBEDDED.get(kind, ()):
            if (got := _at(data, keys)) is not None:
                check(inner, got, f"{path}#/{'/'.join(keys)}")
    return data


def _at(data: Any, keys: tuple[str, ...]) -> Any:
    for k in keys:
        data = data.get(k) if isinstance(data, dict) else None
    return data
