"""knee's jinja2 templates (workflow/knee/templates): every page knee publishes is one, in the
number formats of knee.publish.numbers. Here too the two pages of the comparison: comparison.md
(the bar's verdicts and the comparison table, also what `knee compare` prints of an invalid
comparison) and verdict.html (the same as one self-contained page, for the Snakemake report)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from knee.publish import mdtext
from knee.publish.numbers import ci, fmt, interval_text, level, pctf

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def templates(html: bool) -> jinja2.Environment:
    """knee's templates; an HTML one escapes every value it shows."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=html,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["pctf"] = pctf
    env.filters["md"], env.filters["code"] = mdtext.text, mdtext.code
    env.globals.update(fmt=fmt, pctf=pctf, ci=ci, level=level, interval_text=interval_text)
    return env


def markdown(template: str, **context: Any) -> str:
    """A Markdown page from its template (escaping is the template's: `md` and `code`)."""
    return templates(html=False).get_template(template).render(**context)


def comparison_markdown(comparison: Mapping[str, Any], bar: Mapping[str, Any] | None = None
                        ) -> str:
    """comparison.md: the validation, the bar's verdicts when given, and every row (or every
    mismatch of an invalid comparison)."""
    return markdown("comparison.md.j2", comparison=comparison, bar=bar)


def verdict_html(comparison: Mapping[str, Any], bar: Mapping[str, Any]) -> str:
    """The bar's verdicts and the comparison table as one self-contained page (for the
    Snakemake report)."""
    return templates(html=True).get_template("verdict.html.j2").render(
        comparison=comparison, bar=bar, pctf=pctf, ci=ci, fmt=fmt, level=level)
