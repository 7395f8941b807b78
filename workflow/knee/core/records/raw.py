"""The raw measurements: a raw file (raw/<session>/<instrument>.json), its windows and each
request's record, as the load generator and the session write them."""

from typing import Any, Required, TypedDict

from knee.core.records.base import Point, Section, Stamped
from knee.core.records.covariate import CpuSpeed
from knee.core.records.together import Together


class RequestRecord(TypedDict, total=False):
    """One request as the load generator recorded it (knee.measure.client): when it was sent,
    its first and last token and when it ended (monotonic seconds), each streamed chunk's time
    and tokens, the token counts the server gave, and, where the server returned them, the
    output's token ids and their sha256."""

    index: Required[int]
    warmup: Required[bool]
    error: Required[str | None]
    finish_reason: Required[str | None]
    output_tokens: Required[int]
    prompt_tokens: Required[int | None]
    t_send: Required[float]
    t_first: Required[float | None]
    t_last: Required[float | None]
    t_done: Required[float]
    chunk_times: Required[list[float]]
    chunk_tokens: Required[list[int]]
    server_stamps: Required[Any]
    output_sha256: str | None
    output_token_ids: list[int] | None


class RawWindow(TypedDict, total=False):
    """One window of load in a raw file: its point, its requests' records, the scrapes."""

    point: Required[Point]
    run: Required[int]
    profile: Required[Section]
    records: Required[list[RequestRecord]]
    wall_s: Required[float]
    concurrency_held_share: float | None  # a closed loop's time at its concurrency
    turn_wait_s: float  # interleaved order: the time the partner had its turn
    hold: Section  # min_window_s: how long the concurrency was held, and whether it was reached
    cpu_speed: dict[str, CpuSpeed]  # the host's speed over this run (knee.measure.host.speed)
    prefix_cache: Section
    prom_before: str
    prom_after: str


class RawFile(Stamped, total=False):
    """raw/<session>/<instrument>.json: one instrument's windows in one session."""

    session: Required[str]
    instrument: Required[str]
    points: Required[list[RawWindow]]
    host: Section
    warmup: Section
    together: Together


class InstrumentRun(TypedDict):
    """What an instrument's run gives its session (knee.instruments.spec.Spec.run): its
    windows and warm-up; the session adds its id, the host's facts and any partner's."""

    instrument: str
    points: list[RawWindow]
    warmup: Section | None
