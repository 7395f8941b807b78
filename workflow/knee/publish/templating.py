"""knee's jinja2 templates (workflow/knee/templates), and the one page the comparison renders
to HTML: the bar's verdicts and the comparison table (verdict.html, for the Snakemake report)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from knee.publish import mdtext
from knee.publish.numbers import ci, fmt, level, pctf

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def templates(html: bool) -> jinja2.Environment:
    """knee's templates; an HTML one escapes every value it shows."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=html,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["pctf"] = pctf
    env.filters["md"], env.filters["code"] = mdtext.text, mdtext.code
    return env


def verdict_html(comparison: Mapping[str, Any], bar: dict) -> str:
    """The bar's verdicts and the comparison table as one self-contained page (for the
    Snakemake report)."""
    return templates(html=True).get_template("verdict.html.j2").render(
        comparison=comparison, bar=bar, pctf=pctf, ci=ci, fmt=fmt, level=level)
