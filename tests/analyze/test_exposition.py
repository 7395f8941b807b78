"""The fast reading of Prometheus text gives what prometheus_client's parser gives: on the
published folders' scrapes (every folder, every instrument of its first session, and the
scrapes a probe or fixture embeds per point), and on hand-written lines at the edges of the
format; a line outside its strict form leaves the whole text to prometheus_client."""

import gzip
import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from knee.analyze.window import exposition, prom
from knee.core.errors import KneeError
from tests.helpers import ROOT


def reference(text: str) -> dict:
    """prometheus_client's samples, as knee keeps them."""
    out: dict = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.endswith("_created"):
                out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def typed(samples: dict) -> dict:
    """The samples with each value's type and repr beside it (an int read as a float would
    differ; a NaN equals a NaN)."""
    return {n: {k: (type(v).__name__, repr(v)) for k, v in s.items()} for n, s in samples.items()}


def read(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode()


def published_scrapes() -> list[tuple[str, str]]:
    """(where, text) of every folder's first-session scrapes and the points' own scrapes of a
    raw file that embeds them."""
    out = []
    for folder in sorted(p for p in (ROOT / "results").iterdir() if (p / "plan.json").is_file()):
        first = json.loads((folder / "plan.json").read_text())["protocol"]["sessions"][0]["id"]
        raw = folder / "raw" / first
        for path in sorted(raw.glob("*.prom.*")):
            out.append((str(path.relative_to(ROOT)), read(path)))
        for path in sorted(raw.glob("*.json*")):
            if ".metrics." in path.name:
                continue
            points = json.loads(read(path)).get("points", [])
            out += [(f"{path.relative_to(ROOT)} {p['point']} {k}", p[k]) for p in points[:2]
                    for k in ("prom_before", "prom_after") if k in p]
    return out


def test_every_published_scrape_is_read_the_same_by_the_fast_reading():
    scrapes = published_scrapes()
    assert len(scrapes) >= 150
    for where, text in scrapes:
        fast = exposition.samples(text)
        assert fast is not None, f"{where}: left to prometheus_client"
        assert typed(fast) == typed(reference(text)), where


EDGES = [
    # escapes in a label value, a trailing comma, a timestamp, an int and special floats
    '# TYPE a_total counter\na_total{path="x\\\\y\\"z\\n",b="",} 3 1700000000000\n'
    'g{le="+Inf"} NaN\nh -Inf\ni 1e3\n',
    # a counter family named without _total: its samples gain it
    "# HELP reqs Requests.\n# TYPE reqs counter\nreqs{code=\"200\"} 7\nreqs 2.5\n",
    # a histogram, its _created outside the family, the family's samples after it
    '# TYPE h histogram\nh_bucket{le="1"} 1\nh_created 5\nh_bucket{le="+Inf"} 2\nh_count 2\n'
    "h_sum 0.5\n",
    # comments that are neither HELP nor TYPE, blank lines, tabs around a line
    "# just words here\n#\n\n\tx 1\t\n",
]
FALLBACK = [
    "# TYPE c counter\nc 1\n# TYPE c counter\nc 2\n",  # a type after the family's samples
    'x{a="1",a="2"} 3\n',  # a label given twice
    "x 1_000\n",  # an underscore in a value
    'x {a="1"} 3\n',  # a blank before the labels
    "x\t3\n",  # a tab between name and value
    '{__name__="x"} 3\n',  # the name among the labels
    "# TYPE x unknowntype\nx 3\n",  # a type prometheus_client knows no suffixes of
    "x 1 2 3 4\n",  # more than a value and a timestamp (prometheus_client takes the first)
]


@pytest.mark.parametrize("text", EDGES)
def test_lines_at_the_edges_of_the_form_read_as_prometheus_client_reads_them(text):
    fast = exposition.samples(text)
    assert fast is not None
    assert typed(fast) == typed(reference(text))
    assert typed(prom.parse(text)) == typed(reference(text))


@pytest.mark.parametrize("text", FALLBACK)
def test_a_line_outside_the_strict_form_is_left_to_prometheus_client(text):
    assert exposition.samples(text) is None
    try:
        want = reference(text)
    except ValueError:
        with pytest.raises(KneeError, match="not Prometheus text format"):
            prom.parse(text, "a scrape")
    else:
        assert typed(prom.parse(text)) == typed(want)


@pytest.mark.parametrize("text", ['x{a="1} 3\n', "x{a=1} 2\n", "1x 2\n", "# TYPE x\n"])
def test_text_that_is_not_the_format_is_refused_in_prometheus_clients_words(text):
    assert exposition.samples(text) is None
    with pytest.raises(KneeError, match="a scrape: not Prometheus text format"):
        prom.parse(text, "a scrape")
