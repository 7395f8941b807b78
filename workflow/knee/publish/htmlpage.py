"""index.html: a results folder's README as one styled page a browser opens offline, beside the
files it links to. Rendered from the README's own Markdown (CommonMark with tables, as GitHub
reads it), so the page and the README never say different things: the verdict words coloured,
the first screen's box set apart, wide tables scrolling inside the page, and every link to a
JSON field naming the file and the field it lands on (a browser opens such a file at its top).
Text from a config reaches the README escaped (knee.publish.mdtext); links that are not
relative to the folder or to the web are dropped by the parser."""

from __future__ import annotations

import html
import itertools
import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from knee.publish.templating import templates

VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "CONFOUNDED", "INVALID")
VERDICT_WORD = re.compile(r"\b(" + "|".join(VERDICTS) + r")\b")
JSON_FIELD = re.compile(r"(?P<file>[^#]+\.json)#(?P<field>/.*)")


def parser() -> MarkdownIt:
    """GitHub's reading: CommonMark, pipe tables, the HTML knee writes (<details>, <br>)."""
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def field_titles(tokens: list[Token]) -> None:
    """A link to a JSON field says, on hover and to a screen reader, which file and field."""
    for t in tokens:
        href = t.attrGet("href") if t.type == "link_open" else None
        m = JSON_FIELD.fullmatch(str(href)) if href else None
        if m:
            t.attrSet("title", f"{m['file']}, field {m['field']}")


def verdict_spans(children: list[Token]) -> list[Token]:
    """The verdict words of a heading's text, each in a span of its verdict's class."""
    out = []
    for t in children:
        if t.type != "text" or not VERDICT_WORD.search(t.content):
            out.append(t)
            continue
        for i, part in enumerate(VERDICT_WORD.split(t.content)):
            if i % 2:
                out.append(Token("html_inline", "", 0,
                                 content=f'<span class="v {part}">{part}</span>'))
            elif part:
                out.append(Token("text", "", 0, content=part))
    return out


def mark(tokens: list[Token]) -> None:
    """Verdicts coloured (bold verdict words and the title's), JSON links titled."""
    heading = False
    for t in tokens:
        if t.type == "heading_open":
            heading = t.tag == "h1"
        elif t.type == "inline" and t.children:
            if heading:
                t.children = verdict_spans(t.children)
            kids = t.children
            for a, b in itertools.pairwise(kids):
                if a.type == "strong_open" and b.type == "text" and b.content in VERDICTS:
                    a.attrSet("class", f"v {b.content}")
            field_titles(kids)
            heading = False


def body(markdown: str) -> str:
    md = parser()
    tokens = md.parse(markdown)
    mark(tokens)
    page: str = md.renderer.render(tokens, md.options, {})
    return page


def title(markdown: str) -> str:
    """The README's first heading as plain text (its links' text kept)."""
    first = next((line[2:] for line in markdown.splitlines() if line.startswith("# ")), "")
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", first).replace("\\", "")


def render(markdown: str) -> str:
    """The page of a README's text."""
    return templates(html=True).get_template("index.html.j2").render(
        title=html.unescape(title(markdown)), body=body(markdown))
