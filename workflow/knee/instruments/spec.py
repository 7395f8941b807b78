"""What an instrument declares about itself, read by every stage that handles its window.

An instrument is one module under knee/instruments/ holding a `SPEC`: its name, the config
section it takes (a JSON Schema, merged into the config schema), the README title of its rows,
the points a bar rule may name, the sections of the comparison it derives from its windows
(`Derived`), the figures it draws (`Figure`), and its `run(target, cfg)`.
`run` talks to the served engine only through the target it is given
(knee.measure.runtime.target.Target: send, tokenizer, scrape, counters, check_alive, record), so
this package never imports the client or a runtime, and the analysis stages may read the
registry. A derived section's `derive(windows)` computes from the instrument's raw windows
the comparison hands it (knee.analyze.compare.Windows: every session's window, the pairs, and
the figures the comparison's rows are made of), and a figure's `draw(ax, view)` draws on one
matplotlib Axes from the derived files the publishing stage hands it in `view`
(knee.publish.figures.View), so this package imports neither matplotlib nor the analysis.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from knee.core import jsonio, metrics
from knee.core.records import InstrumentRun


@dataclass(frozen=True)
class Figure:
    """One figure, figures/<name>.png and .svg: `draw(ax, view)` on one Axes, titled
    "<experiment>: <title>", captioned in the Snakemake report by workflow/report/<name>.rst
    and shown in the README's figures with `alt` (listed=False: a section of its own shows it)."""
    name: str
    title: str
    alt: str
    draw: Callable[..., None]
    listed: bool = True


@dataclass(frozen=True)
class Derived:
    """One section of comparison.json, `key`: `derive(windows)` -> a list, from the
    instrument's windows (knee.analyze.compare.Windows); an empty list where the instrument did
    not run or the arms did not measure the same requests. `caveats(section, comparison,
    words)` -> the README's caveats it gives rise to, written with the README's number formats
    (knee.publish.readme.WORDS)."""
    key: str
    derive: Callable[..., list[Any]]
    caveats: Callable[..., list[str]] | None = None


# What the stages that read across instruments take an instrument for, one instrument a role,
# so that they never name one: LOAD measures throughput at each point of its config's
# `concurrency` list with `output_tokens` a request (the README's headline, the campaign's
# throughput rows, the recommendation's k model); SINGLE_STREAM measures one stream, its rows
# at point "all" the decode rate p50 over every request (the campaign's single-stream row).
# one dataset selection of an instrument: its config key, the selection, the prompts it sends
Selection = tuple[str, dict[str, Any], int]

LOAD = "load"
SINGLE_STREAM = "single-stream"
ROLES = (LOAD, SINGLE_STREAM)


@dataclass(frozen=True)
class Spec:
    name: str
    title: str  # the README title of its comparison rows
    run: Callable[..., InstrumentRun]  # run(target, cfg)
    schema: dict[str, Any]  # its config section, under instruments.<name>
    # the points of its config a bar rule may name; None: no bar rule may name it
    bar_points: Callable[[dict[str, Any]], list[Any]] | None = None
    pools: bool = False  # point "all": the decode rate p50 over every request of the window
    api: str | None = None  # the endpoint it always uses, whatever instruments.api says
    # each point is bracketed by scrapes of its own (prom_before, prom_after in its record): the
    # window's metrics list each point's own under "temperatures" (the name the probe's, one per
    # temperature, gave it; the fixture's are one per class), beside the window's as a whole. A
    # raw file written before its instrument kept them has none, and its metrics no such list
    point_scrapes: bool = False
    derived: tuple[Derived, ...] = ()  # what the comparison derives from its windows
    figures: tuple[Figure, ...] = ()  # what it draws (knee.publish.figures renders them)
    role: str | None = None  # one of ROLES, or none
    # its windows' acceptance counters (at the arm's one k) feed the recommendation's
    # acceptance model; a window of prompts unlike the load's (the fixture's classes, the depth
    # instrument's long prompts) does not
    acceptance: bool = False
    # the temperatures it samples at by itself (the probe's list), whatever instruments.sampling
    # says; None: it samples as instruments.sampling says (greedy where that is absent)
    temperatures: Callable[[dict[str, Any]], list[float]] | None = None
    # its prompts are random words (knee.core.prompts.exact_token_prompts), not text of a kind a
    # user sends: the README says its acceptance is the model's on such text
    random_prompts: bool = False
    # its part of the plan's one-line summary of the instruments, from its config section
    # ("sweep: concurrency [1, 8] x 2 runs"); None: the summary does not name it
    summary: Callable[[dict[str, Any]], str] | None = None
    # check(section, arms, source): what its config section needs of the served arms (the
    # plan's resolved arms, knee.plan.arms) that the schema cannot say, raising KneeError that
    # names the key; None: the schema says everything
    check: Callable[[dict[str, Any], dict[str, Any], str], None] | None = None
    # its selections from packaged datasets (knee.core.datasets), from its config section: each
    # one's config key, the selection, and how many of its prompts it sends (each once)
    datasets: Callable[[dict[str, Any]], list[Selection]] | None = None
    # the prompt files of its own it reads (copied with the config into the results folder)
    prompt_files: Callable[[dict[str, Any]], list[Path]] | None = None


REGISTRY: dict[str, Spec] = {}
# the keys under instruments that every instrument shares (no instrument may take their name)
SHARED = ("seed", "api", "request_timeout_s", "stop_at_eos", "sampling")


def register(spec: Spec) -> Spec:
    """Add an instrument; sessions run the registered ones in the order they were added."""
    if spec.name in REGISTRY or spec.name in SHARED:
        raise ValueError(f"instrument name {spec.name!r} is taken")
    if spec.role is not None and spec.role not in ROLES:
        raise ValueError(f"instrument {spec.name!r}: role {spec.role!r} is none of {ROLES}")
    if spec.role is not None and any(o.role == spec.role for o in REGISTRY.values()):
        raise ValueError(f"instrument {spec.name!r}: role {spec.role!r} is taken")
    _unique(spec, "derived", Derived, "derive", "key",
            "derived section {item!r} has no derive function (a Derived is needed)",
            "comparison section {name!r} is taken")
    _unique(spec, "figures", Figure, "draw", "name",
            "figure {item!r} is registered but nothing draws it (a Figure with a draw function "
            "is needed)", "figure name {name!r} is taken")
    REGISTRY[spec.name] = spec
    _changed()
    return spec


def _unique(spec: Spec, field: str, kind: type, function: str, key: str, bare: str,
            taken: str) -> None:
    """Each of spec.<field> is a `kind` with a callable `function` and a `key` no registered
    instrument's <field> has (bare and taken: the messages, formatted with item and name)."""
    seen = {getattr(x, key) for other in REGISTRY.values() for x in getattr(other, field)}
    for item in getattr(spec, field):
        if not isinstance(item, kind) or not callable(getattr(item, function)):
            raise ValueError(f"instrument {spec.name!r}: " + bare.format(item=item))
        if getattr(item, key) in seen:
            raise ValueError(f"instrument {spec.name!r}: " + taken.format(name=getattr(item, key)))
        seen.add(getattr(item, key))


def unregister(name: str) -> None:
    REGISTRY.pop(name)
    _changed()


def _changed() -> None:
    config_schema.cache_clear()


@cache
def config_schema() -> dict[str, Any]:
    """The config schema as knee validates a config with it: the file's, with each registered
    instrument's section and the instruments a bar rule may name."""
    schema = copy.deepcopy(jsonio.schema_file("config"))
    schema["properties"]["instruments"]["properties"].update(
        {name: spec.schema for name, spec in REGISTRY.items()})
    rule = schema["properties"]["bar"]["properties"]["rules"]["items"]["properties"]
    rule["instrument"]["enum"] = [n for n, spec in REGISTRY.items() if spec.bar_points]
    rule["metric"]["enum"] = list(metrics.NAMES)
    return schema
