"""The instruments, one module each, in the order a session runs them (knee.instruments.spec)."""

from knee.instruments import depth, fixture, probe, sweep
from knee.instruments.spec import (
    REGISTRY,
    Derived,
    Figure,
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


def derived() -> tuple[tuple[str, Derived], ...]:
    """Every registered instrument's derived comparison sections, (instrument, section), in
    registration order (the order of their keys in comparison.json)."""
    return tuple((name, d) for name, spec in REGISTRY.items() for d in spec.derived)


def figures() -> tuple[Figure, ...]:
    """Every registered instrument's figures, in registration order."""
    return tuple(f for spec in REGISTRY.values() for f in spec.figures)


__all__ = ["REGISTRY", "Derived", "Figure", "Spec", "config_schema", "derived", "figures", "get",
           "names", "register", "unregister"]
