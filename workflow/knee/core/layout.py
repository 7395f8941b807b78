"""The layout of a results folder, spelled once: every path in it, relative to the folder. The
rules (workflow/rules/*.smk: f"{R}/{layout.X}") and the Python that writes, reads, audits or
packages a folder (`root / layout.X`) name a file only through this module, so a moved output
moves everywhere at once. Functions take the session id or the name and return the path;
Snakemake passes "{sid}" and the like to get its wildcard patterns."""

from __future__ import annotations

import re
from pathlib import PurePath

from knee.core.errors import KneeError

PLAN = "plan.json"
README = "README.md"
PAGE = "index.html"  # the README as one styled page, for a browser, offline
MANIFEST = "MANIFEST.sha256"
CRATE = "ro-crate-metadata.json"
WORKFLOW = "workflow"  # the config and workflow files as they ran
CONFIG_COPY = "workflow/config.yaml"
SNAKEFILE_COPY = "workflow/Snakefile"
PROMPT_COPIES = "workflow/prompts"
# a verification run's registered prediction, sealed when it is planned (knee prediction)
PREDICTION = "workflow/recommendation.json"

RECEIPTS = "receipts"
RAW = "raw"
REQUESTS = "raw/requests.parquet"

COMPARISON_DIR = "comparison"
COMPARISON = "comparison/comparison.json"
BAR = "comparison/bar.json"
COMPARISON_MD = "comparison/comparison.md"
VERDICT_HTML = "comparison/verdict.html"
ACCEPTANCE = "comparison/acceptance.json"
ROWS = "comparison/rows.csv"

FIGURES = "figures"
RULES_FIGURE = "rules"  # the bar's figure: each rule's pairs, interval and threshold
RECOMMEND = "recommend"
RECOMMENDATION = "recommend/recommendation.json"
RECOMMEND_README = "recommend/README.md"
VERIFY = "recommend/verify.yaml"

PROTOCOL = "protocol"
REALIZED = "protocol/realized.json"

LOGS = "logs"

# the names a folder's own files carry and knee builds paths from: a session id as the plan
# makes it (PAIR-ARM), an instrument's name, or a pattern of them: a Snakemake wildcard
# ("{sid}") for the rules, a glob's "*" for the crate. A name read from a folder's content that
# is not one is refused before any path is made of it
WILDCARD = re.compile(r"\{[a-z_]+\}|\*")
SESSION_ID = re.compile(rf"(?:[1-9][0-9]{{0,5}}|{WILDCARD.pattern})-(control|candidate)")
INSTRUMENT = re.compile(r"[a-z][a-z0-9_]{0,31}")


def _named(name: object, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(name, str) or not (pattern.fullmatch(name) or WILDCARD.fullmatch(name)):
        raise KneeError(f"{str(name)[:80]!r} is not {what}: no path is made of it")
    return name


def session(sid: object) -> str:
    """A session id, checked to be one the plan makes (PAIR-ARM)."""
    return _named(sid, SESSION_ID, "a session id (PAIR-control or PAIR-candidate)")


def instrument_name(name: object) -> str:
    return _named(name, INSTRUMENT, "an instrument's name")


def receipt(sid: str, kind: str) -> str:
    """A session's receipt: boot, stop or cache."""
    return f"{RECEIPTS}/{session(sid)}-{kind}.json"


def facts(name: str) -> str:
    """A receipt of the whole experiment (engine.json, image.json, servers.json)."""
    return f"{RECEIPTS}/{name}"


def raw_dir(sid: str) -> str:
    """A session's raw measurements (knee.core.rawfiles names the files in it)."""
    return f"{RAW}/{session(sid)}"


def metrics(sid: str, instrument: str) -> str:
    """One window's metrics, derived from its raw file and scrapes."""
    return f"{RAW}/{session(sid)}/{instrument_name(instrument)}.metrics.json"


def look(pairs: int | str) -> str:
    """Stopping by precision: the decision after a pair."""
    return f"{PROTOCOL}/after-pair-{pairs}.json"


def figure(name: str, ext: str) -> str:
    return f"{FIGURES}/{name}.{ext}"


def recommend_figure(ext: str) -> str:
    return f"{RECOMMEND}/recommend.{ext}"


def log(name: str) -> str:
    return f"{LOGS}/{name}.log"


def prompt_copy(path: str | PurePath) -> str:
    """The folder's copy of a fixture prompt file: under its own folder's name."""
    path = PurePath(path)
    return f"{PROMPT_COPIES}/{path.parent.name}/{path.name}"
