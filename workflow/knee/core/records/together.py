"""Both arms of a pair at once (protocol.order simultaneous or interleaved): what a raw file
records of its window's partner, and the comparison's section that checks the windows."""

from typing import Any, Required, TypedDict


class Together(TypedDict, total=False):
    """A raw file's `together`: the partner session, when both were ready (start), how long
    this one waited for it, the window's own span on the clock both share and, interleaved,
    its turns ([unit, position, began, ended] each)."""

    partner: Required[str]
    start: Required[float]
    waited_s: Required[float]
    began: float
    ended: float
    turns: list[list[Any]]


class SpanAgreement(TypedDict):
    """How far apart two windows began, and the share of the longer one both ran."""

    skew_s: float
    overlap: float


class SimultaneousWindow(SpanAgreement):
    """One window both arms of a pair ran at once, on the sets the plan gave them."""

    pair: int
    instrument: str
    sets: dict[str, int]


class TurnAgreement(TypedDict):
    """Whether the arms took the same units in the registered order, for how long both sent
    at once, and the median handoff between them."""

    units: dict[str, int]
    as_registered: bool
    concurrent_s: float
    handoff_s: float | None


class InterleavedWindow(TurnAgreement):
    """One window whose arms took turns, on the sets the plan gave them."""

    pair: int
    instrument: str
    sets: dict[str, int]


class Simultaneous(TypedDict):
    """comparison.json's simultaneous section."""

    method: str
    windows: list[SimultaneousWindow]
    max_skew_s: float | None
    min_overlap: float | None


class Interleaved(TypedDict):
    """comparison.json's interleaved section."""

    method: str
    windows: list[InterleavedWindow]
    as_registered: bool
    max_concurrent_s: float | None
    median_handoff_s: float | None


class TogetherSection(TypedDict, total=False):
    """The comparison's section of a plan whose arms ran at once (none for any other)."""

    simultaneous: Simultaneous
    interleaved: Interleaved
