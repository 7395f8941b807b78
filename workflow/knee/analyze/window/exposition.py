"""A fast reading of the Prometheus text an engine's /metrics serves, line by line with
regular expressions: the same samples prometheus_client's parser gives (names, labels, values
as int or float, a counter family's samples named as it names them) for the lines an engine
writes, in about 40 % of its time (bench/exposition.py). A text with any line outside that
strict form is left to prometheus_client (`samples` returns None), which reads every form it
knows and refuses what is not the format, with its own words."""

from __future__ import annotations

import re
from typing import Any

# a sample line: name, labels (name="value" pairs, a trailing comma allowed), one value and an
# optional integer timestamp, single spaces apart
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(rf"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{{((?:{_LABEL}(?:,{_LABEL})*,?)?)\}})? "
                    r"([^ \t_]+)(?: -?[0-9]+)?")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
# the samples a family of each type holds (prometheus_client's allowed names), by suffix
SUFFIXES = {"counter": ("",), "gauge": ("",), "summary": ("_count", "_sum", ""),
            "histogram": ("_count", "_sum", "_bucket")}

Samples = dict[str, dict[tuple[Any, ...], float]]


def value(text: str) -> float:
    """A sample's value as prometheus_client reads it: an int where the text is one."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def unescape(text: str) -> str:
    return re.sub(r'\\[\\"n]', lambda m: ESCAPES[m.group(0)], text) if "\\" in text else text


class Families:
    """Which family a sample belongs to, as the # HELP and # TYPE lines before it say."""

    def __init__(self) -> None:
        self.name, self.kind, self.allowed = "", "untyped", set[str]()
        self.seen = 0  # samples kept under the family so far

    def comment(self, line: str) -> bool:
        """Take a comment line; False where it is not one this reading knows."""
        parts = line.split(None, 3)
        if len(parts) < 3 or parts[1] not in ("HELP", "TYPE"):
            return True  # any other comment, as prometheus_client ignores it
        if not NAME.fullmatch(parts[2]):
            return False
        if parts[1] == "HELP":
            if parts[2] != self.name:
                self.name, self.kind, self.allowed, self.seen = parts[2], "untyped", {parts[2]}, 0
            return True
        if len(parts) < 4 or parts[3] not in SUFFIXES or (parts[2] == self.name and self.seen):
            return False  # a type given after the family's samples renames them all
        self.name, self.kind, self.seen = parts[2], parts[3], 0
        self.allowed = {self.name + s for s in SUFFIXES[self.kind]}
        return True

    def named(self, name: str) -> str:
        """The name a sample is kept under: a counter family's sample gains `_total` where
        the family's name lacks it; a sample outside the family ends the family."""
        if name not in self.allowed:
            self.name, self.kind, self.allowed, self.seen = "", "untyped", set(), 0
            return name
        self.seen += 1
        if self.kind == "counter" and not self.name.endswith("_total"):
            return name + "_total"
        return name


def samples(text: str) -> Samples | None:
    """Samples by exact name, labels kept (sorted), `_created` samples dropped; None where a
    line is not of the strict form this reading knows."""
    out: Samples = {}
    families = Families()
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if not families.comment(line):
                return None
            continue
        m = SAMPLE.fullmatch(line)
        if m is None:
            return None
        name, labels, number = m.group(1), m.group(2), m.group(3)
        try:
            v = value(number)
        except ValueError:
            return None
        pairs = [(k, unescape(x)) for k, x in LABEL.findall(labels)] if labels else []
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys) or "__name__" in keys:
            return None
        name = families.named(name)
        if not name.endswith("_created"):
            out.setdefault(name, {})[tuple(sorted(pairs))] = v
    return out
