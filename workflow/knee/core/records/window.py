"""The records of a window's metrics (raw/<session>/<instrument>.metrics.json), as
knee.analyze.window.prom makes them from a window's scrapes and records."""

from typing import Required, TypedDict

from knee.core.records.base import Point, Stamped


class ClientSummary(TypedDict):
    """The client's view of a whole window (every request in it), beside the server's."""

    requests: int
    ttft_s_mean: float | None
    ttft_s_p50: float | None
    e2e_s_mean: float | None
    e2e_s_p50: float | None


class NotHeld(TypedDict):
    """A run that held its concurrency under HELD of its time, or that was held for
    min_window_s and ended sooner (knee.analyze.window.held)."""

    session: str
    instrument: str
    point: Point
    run: int
    share: float | None
    wall_s: float
    min_window_s: float | None


class Histogram(TypedDict):
    """A server histogram's delta over a window: count, sum, mean and quantiles (None where
    the window counted nothing)."""

    count: float
    sum: float
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None


class WindowDeltas(TypedDict, total=False):
    """What a window's scrape pair gives (prom.window_deltas): checked counter deltas, the
    server's histograms and, with speculation on, the acceptance figures and the ceiling."""

    window: Required[str]  # session/instrument, and a point's own
    requests: Required[int]
    generation_tokens: Required[float]
    flags: Required[list[str]]
    server_latency: Required[dict[str, Histogram | None]]
    speculation: Required[str]  # on or off
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    per_position_rate: list[float | None]
    knee_position: int | None
    knee_threshold: float
    k: int
    ceiling_decode_rate: float | None
    modelled_decode_rate: float | None
    tokens_per_step: float | None
    step_time_s: float | None
    step_time_source: str
    client_output_tokens: int
    prompt_tokens: float
    sampling_withheld: str  # why the acceptance figures are not shown
    spec_decode_num_accepted_tokens: float
    spec_decode_num_accepted_tokens_per_pos: list[float]
    spec_decode_num_draft_tokens: float
    spec_decode_num_drafts: float


class PointMetrics(WindowDeltas, total=False):
    """One point's own window metrics, from the scrapes embedded in its raw record."""

    point: Required[Point]


class WindowMetrics(Stamped, WindowDeltas, total=False):
    """raw/<session>/<instrument>.metrics.json: what the scrapes and records of a session's
    windows give, per window."""

    session: Required[str]
    instrument: Required[str]
    client_latency: Required[ClientSummary]
    scrapes: list[str]
    temperatures: list[PointMetrics]


class AcceptanceRow(TypedDict, total=False):
    """comparison/acceptance.json's row of one session window, with the file it came from."""

    session: Required[str]
    instrument: Required[str]
    source: Required[str]
    speculation: str | None
    knee_threshold: float | None
    client_latency: ClientSummary | None
    server_latency: dict[str, Histogram | None] | None
    generation_tokens: float | None
    client_output_tokens: int | None
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    per_position_rate: list[float | None] | None
    knee_position: int | None
    step_time_s: float | None
    modelled_decode_rate: float | None
    ceiling_decode_rate: float | None
    flags: list[str] | None
    temperatures: list[PointMetrics] | None
    sampling_withheld: str


class CounterDisagreement(TypedDict):
    """A window whose raw records do not hold the traffic the server counted."""

    session: str
    instrument: str
    why: str


class OverBoots(TypedDict):
    """comparison/acceptance.json's row of one arm at one point: the acceptance rate's and
    length's means over the boots that drafted there, their intervals, each position's mean."""

    arm: str
    point: Point
    boots: int
    mean: float
    interval: list[float] | None
    length_mean: float
    length_interval: list[float] | None
    per_position_rate: list[float | None]


class AcceptanceTable(TypedDict):
    """comparison/acceptance.json: every window's row and each arm's over the boots."""

    windows: list[AcceptanceRow]
    over_boots: list[OverBoots]
