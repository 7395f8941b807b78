"""The instruments, one module each, in the order a session runs them (knee.instruments.spec)."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knee.core.records import Plan
from knee.instruments import depth, fixture, probe, sweep
from knee.instruments.spec import (
    LOAD,
    REGISTRY,
    SINGLE_STREAM,
    Derived,
    Figure,
    Selection,
    Spec,
    config_schema,
    register,
    unregister,
)

for _module in (sweep, fixture, depth, probe):
    register(_module.SPEC)


def get(name: str) -> Spec:
    return REGISTRY[name]


def names() -> list[str]:
    return list(REGISTRY)


def instrument_names(plan: Plan) -> list[str]:
    """The plan's instruments, in the order a session runs them."""
    return [name for name in REGISTRY if name in plan["instruments"]]


def role(name: str) -> str:
    """The registered instrument that has this role (spec.ROLES): every role has one."""
    found = next((n for n, spec in REGISTRY.items() if spec.role == name), None)
    if found is None:
        raise LookupError(f"no registered instrument has the role {name!r}")
    return found


def acceptance() -> tuple[str, ...]:
    """The instruments whose windows feed the recommendation's acceptance model."""
    return tuple(n for n, spec in REGISTRY.items() if spec.acceptance)


def sampled_temperatures(config: dict[str, Any]) -> list[float]:
    """Every temperature above 0 that a configured instrument samples at (its own, or
    instruments.sampling's), sorted: the temperatures a boot's sampling check covers."""
    shared = float((config.get("sampling") or {}).get("temperature", 0.0))
    out = set()
    for name, spec in REGISTRY.items():
        if name in config:
            out.update(spec.temperatures(config[name]) if spec.temperatures else [shared])
    return sorted(float(t) for t in out if t > 0)


def dataset_selections(config: Mapping[str, Any]) -> list[Selection]:
    """Every dataset selection of these instruments (each registered instrument's, in the
    order a session runs them): its config key, the selection, and how many of its prompts the
    instrument sends."""
    return [s for name, spec in REGISTRY.items() if spec.datasets and config.get(name)
            for s in spec.datasets(config[name])]


def dataset_names(config: Mapping[str, Any]) -> list[str]:
    """Every dataset these instruments select from, sorted."""
    return sorted({selection["name"] for _, selection, _ in dataset_selections(config)})


def prompt_files(config: Mapping[str, Any]) -> list[Path]:
    """Every prompt file of their own these instruments read (none that select from a
    dataset), in the order a session runs them."""
    return [p for name, spec in REGISTRY.items() if spec.prompt_files and config.get(name)
            for p in spec.prompt_files(config[name])]


def derived() -> tuple[tuple[str, Derived], ...]:
    """Every registered instrument's derived comparison sections, (instrument, section), in
    registration order (the order of their keys in comparison.json)."""
    return tuple((name, d) for name, spec in REGISTRY.items() for d in spec.derived)


def figures(plan: Plan | None = None) -> tuple[Figure, ...]:
    """The figures of the plan's instruments (of every registered one without a plan), in
    registration order: an instrument that does not run draws none."""
    ran = instrument_names(plan) if plan is not None else list(REGISTRY)
    return tuple(f for name in ran for f in REGISTRY[name].figures)


__all__ = ["LOAD", "REGISTRY", "SINGLE_STREAM", "Derived", "Figure", "Selection", "Spec",
           "acceptance", "config_schema", "dataset_names", "dataset_selections", "derived",
           "figures", "get", "names", "prompt_files", "register", "role",
           "sampled_temperatures", "unregister"]
