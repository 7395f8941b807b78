"""What the engine resolved at boot (a boot receipt's engine_resolved) and the differences
between the arms it shows (comparison.json's engine_differences)."""

from typing import Any, Required, TypedDict


class EngineResolved(TypedDict):
    """From the engine's log (knee.analyze.resolved.read): its non-default arguments as it
    printed them (None where it printed none) and the changes it made on its own."""

    non_default_args: Any  # the engine's own mapping, as JSON data, redacted
    changes: list[str]


class EngineDifference(TypedDict, total=False):
    """A difference between the arms beyond the variable: a change the engine made in one
    arm's boots only, a non-default argument the arms ran with differently (with the setting
    in the words bar.expected_engine_differences registers), or different output lengths."""

    kind: Required[str]
    arms: Required[list[str]]
    what: Required[str]
    setting: str


class Excused(TypedDict):
    """An engine difference the bar expected, and the registered entry that excused it."""

    what: str
    by: str


class EngineSide(TypedDict, total=False):
    """comparison.json's engine_differences (absent where no boot recorded what its engine
    resolved and no lengths differ)."""

    engine_differences: list[EngineDifference]
