"""The instruments, one module each, in the order a session runs them (knee.instruments.spec)."""

from knee.instruments import depth, fixture, probe, sweep
from knee.instruments.spec import REGISTRY, Figure, Spec, config_schema, register, unregister

for _module in (sweep, fixture, depth, probe):
    register(_module.SPEC)


def get(name: str) -> Spec:
    return REGISTRY[name]


def names() -> list[str]:
    return list(REGISTRY)


def figures() -> tuple[Figure, ...]:
    """Every registered instrument's figures, in registration order."""
    return tuple(f for spec in REGISTRY.values() for f in spec.figures)


__all__ = ["REGISTRY", "Figure", "Spec", "config_schema", "figures", "get", "names", "register",
           "unregister"]
