"""What an instrument declares about itself, read by every stage that handles its window.

An instrument is one module under knee/instruments/ holding a `SPEC`: its name, the config
section it takes (a JSON Schema, merged into the config schema), the README title of its rows,
the points a bar rule may name, the figures it draws (`Figure`), and its `run(target, cfg)`.
`run` talks to the served engine only through the target it is given
(knee.measure.runtime.target.Target: send, tokenizer, scrape, counters, check_alive, record), so
this package never imports the client or a runtime, and the analysis stages may read the
registry. A figure's `draw(ax, view)` draws on
one matplotlib Axes from the derived files the publishing stage hands it in `view`
(knee.publish.figures.View), so this package imports neither matplotlib nor the analysis.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from knee.core import jsonio


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
class Spec:
    name: str
    title: str  # the README title of its comparison rows
    run: Callable[..., dict]  # run(target, cfg) -> {"instrument", "points", "warmup"}
    schema: dict  # its config section, under instruments.<name>
    # the points of its config a bar rule may name; None: no bar rule may name it
    bar_points: Callable[[dict], list] | None = None
    pools: bool = False  # point "all": the decode rate p50 over every request of the window
    api: str | None = None  # the endpoint it always uses, whatever instruments.api says
    figures: tuple[Figure, ...] = ()  # what it draws (knee.publish.figures renders them)


REGISTRY: dict[str, Spec] = {}
# the keys under instruments that every instrument shares (no instrument may take their name)
SHARED = ("seed", "api", "request_timeout_s", "sampling")


def register(spec: Spec) -> Spec:
    """Add an instrument; sessions run the registered ones in the order they were added."""
    if spec.name in REGISTRY or spec.name in SHARED:
        raise ValueError(f"instrument name {spec.name!r} is taken")
    taken = {f.name for other in REGISTRY.values() for f in other.figures}
    for figure in spec.figures:
        if not isinstance(figure, Figure) or not callable(figure.draw):
            raise ValueError(f"instrument {spec.name!r}: figure {figure!r} is registered but "
                             "nothing draws it (a Figure with a draw function is needed)")
        if figure.name in taken:
            raise ValueError(f"instrument {spec.name!r}: figure name {figure.name!r} is taken")
        taken.add(figure.name)
    REGISTRY[spec.name] = spec
    _changed()
    return spec


def unregister(name: str) -> None:
    REGISTRY.pop(name)
    _changed()


def _changed() -> None:
    config_schema.cache_clear()


@cache
def config_schema() -> dict:
    """The config schema as knee validates a config with it: the file's, with each registered
    instrument's section and the instruments a bar rule may name."""
    schema = copy.deepcopy(jsonio.schema_file("config"))
    schema["properties"]["instruments"]["properties"].update(
        {name: spec.schema for name, spec in REGISTRY.items()})
    rule = schema["properties"]["bar"]["properties"]["rules"]["items"]["properties"]
    rule["instrument"]["enum"] = [n for n, spec in REGISTRY.items() if spec.bar_points]
    return schema
