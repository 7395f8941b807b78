"""Text from a config, an engine or a host, made safe to place in knee's Markdown: it shows
as the text it is and cannot open a link, an image, HTML, a code span, emphasis, a heading, a
list or a table cell of its own."""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# what opens a block at the start of a line: a heading, a quote, a list item
MARKER = re.compile(r"^(?:>|#{1,6}(?=\s|$)|[-+](?=\s|$))")
NUMBERED = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")


def text(value: object) -> str:
    """Plain text inside a paragraph or a table cell: one line, every marker escaped."""
    s = CONTROL.sub(" ", str(value)).replace("\\", "\\\\")
    for ch in "`*|~":
        s = s.replace(ch, "\\" + ch)
    s = s.replace("<", "&lt;").replace("](", "]\\(").replace("![", "!\\[")
    return "\\" + s if MARKER.match(s) else NUMBERED.sub(r"\1\\\2", s)


def code(value: object) -> str:
    """A code span that holds the text whatever backticks it carries (one line; a pipe
    escaped, as a table cell needs)."""
    s = CONTROL.sub(" ", str(value)).replace("|", "\\|")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", s)), default=0) + 1)
    return f"{fence} {s} {fence}" if "`" in s else f"`{s}`"


FOLD_ROWS = 40  # a table longer than this is folded: the page stays readable, the rows a click away


def fold(text: str, limit: int = FOLD_ROWS) -> str:
    """Every Markdown table of more than `limit` rows outside a <details> block, folded into
    one (its rows stay in the file: every number keeps its link)."""
    out: list[str] = []
    lines = text.split("\n")
    i, inside = 0, 0
    while i < len(lines):
        line = lines[i]
        inside += line.count("<details>") - line.count("</details>")
        j = i
        while j < len(lines) and lines[j].startswith("|"):
            j += 1
        if j - i - 2 > limit and not inside:
            out += [f"<details><summary>{j - i - 2} rows: open to read them</summary>", "",
                    *lines[i:j], "", "</details>"]
            i = j
            continue
        out.append(line)
        i += 1
    return "\n".join(out)
