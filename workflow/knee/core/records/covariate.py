"""The host's speed as a covariate (knee.measure.host.speed samples it, knee.analyze.adjust
.covariate reads it): each CPU's speed over a span, the comparison's covariate section, the
balance check and the arm contrast, and what the adjustment did to a rule."""

from typing import Any, Required, TypedDict


class CpuSpeed(TypedDict):
    """One CPU's sampled speed over a span: the median, 10th and 90th percentile (millions of
    additions a second) and the count of samples."""

    median: float
    p10: float
    p90: float
    samples: int


class CovariateRow(TypedDict):
    """A bar rule's figure in one pair: each arm's speed, and what it was taken over."""

    rule: str
    pair: int
    control: float | None
    candidate: float | None
    over: str


class CovariateSection(TypedDict):
    """The comparison's covariate section (bar.adjust): the covariate, the CPUs it counts and
    every rule's rows."""

    name: str
    method: str
    cpus: list[str] | str
    rows: list[CovariateRow]


class Balance(TypedDict):
    """The arms' mean log speed difference over the pairs, in percent, with its interval."""

    estimate_pct: float | None
    interval: list[float] | None


class Contrast(Balance):
    """Two figures' spans: the arms' speed difference over one less that over the other."""

    rules: list[str]
    shown_zero: bool


class ContrastSection(TypedDict):
    """The bar's arm contrast of the covariate across its figures' spans."""

    tolerance_pct: float
    contrasts: list[Contrast]
    shown_zero: bool


class Adjustment(TypedDict, total=False):
    """What the registered adjustment did to one rule: its covariate, slope and tolerance, the
    balance check, and whether it applied (or why not)."""

    covariate: Required[str]
    slope: Required[float]
    tolerance_pct: Required[float]
    applied: Required[bool]
    balance: Balance
    reason: str


class FollowsSpeed(TypedDict):
    """The correlation over boots between a window figure of the host and a rule's figure
    (each relative to its arm's mean)."""

    rule: str
    boots: int
    correlation: float


class WindowSpread(TypedDict):
    """A figure of the host over the windows: its range, its spread, and what followed it."""

    range: list[float]
    spread_pct: float
    rules: list[FollowsSpeed]


class SpeedWindow(TypedDict):
    """The engine CPUs' speed during one window."""

    session: str
    instrument: str
    speed: float


class ClockWindow(TypedDict):
    """The GPUs' SM clock during one window."""

    session: str
    instrument: str
    sm_clock_mhz: float


class HostSpeed(WindowSpread):
    """comparison.json's host_speed: the engine CPUs sampled and how, and each window's speed."""

    cpus: list[str]
    method: str
    windows: list[SpeedWindow]


class GpuClocks(WindowSpread):
    """comparison.json's gpu: the GPUs, the throttle reasons seen, and each window's clock."""

    gpus: Any
    reasons_seen: list[str]
    windows: list[ClockWindow]
