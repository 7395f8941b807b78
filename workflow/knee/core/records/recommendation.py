"""A recommendation (recommend/recommendation.json, knee.analyze.recommend): what it is fitted
from (each session's figures per concurrency, the acceptance counters of the windows that
drafted at the longest horizon) and each of its parts."""

from typing import Required, TypedDict


class PointFigures(TypedDict):
    """One session's figures at one concurrency, over its runs: the median step time, tokens
    per step, the median TTFT, throughput, and eta (throughput against the closed-loop
    formula)."""

    step_s: float
    tokens_per_step: float
    ttft_s: float
    throughput: float
    eta: float


class Observation(PointFigures):
    """A session's figures at a concurrency, with its session, pair, arm and k there."""

    session: str
    pair: int
    arm: str
    c: int
    k: int


class AcceptanceWindow(TypedDict):
    """A window's acceptance counters: its drafts and the tokens accepted at each position."""

    pair: int
    file: str
    drafts: float
    accepted_per_pos: list[float]


class Figures(TypedDict):
    """What the fitted model predicts at one (concurrency, k)."""

    step_s: float
    tokens_per_step: float
    decode_rate: float
    throughput: float


class Prediction(Figures):
    """A prediction with its intervals over the pair resamples; extrapolated where k lies
    outside the horizons measured."""

    concurrency: int
    k: int
    extrapolated: bool
    throughput_interval: list[float] | None
    decode_rate_interval: list[float] | None


class MeasuredFit(TypedDict):
    """An arm's measured throughput at a concurrency against the model's prediction there."""

    arm: str
    concurrency: int
    k: int
    measured: float
    predicted: float
    error_pct: float
    step_s: float
    tokens_per_step: float


class Crossover(TypedDict):
    """The first measured concurrency from which the smallest k wins at every larger one."""

    k: int
    concurrency: int | None
    between: list[int] | None
    reason: str | None


# an arm's throughput per concurrency and the concurrency past which it stops rising, or why
# none (knee.analyze.recommend.speculation.throughput_knee); "break" is a keyword, hence the
# functional form
ThroughputKnee = TypedDict("ThroughputKnee", {
    "concurrency": Required[list[int]], "throughput": Required[list[float]],
    "knee": Required[float | None], "reason": Required[str | None], "break": float,
    "slope_before": float, "slope_after": float, "sse_ratio": float}, total=False)


class CeilingRow(TypedDict):
    """The second reference write-up's ceiling model at one k, at the lowest concurrency."""

    k: int
    concurrency: int
    step_s: float
    tokens_per_step: float
    modelled_decode_rate: float
    ceiling_decode_rate: float


class VerifyGain(TypedDict):
    """The schedule's predicted throughput change against the best fixed k at a concurrency."""

    concurrency: int
    k: int
    control_k: int
    gain_pct: float
    interval: list[float] | None


class BestAt(TypedDict):
    """The best k at a concurrency, how often the resamples chose it, its predicted gain over
    the best fixed k, and the k the schedule keeps there."""

    concurrency: int
    best_k: int
    share_of_resamples: float | None
    gain_pct: float
    interval: list[float] | None
    resolved: bool
    k: int


class ResampleInterval(TypedDict):
    level: str
    resamples: int
    confidence: float
    pairs: int


class Availability(TypedDict):
    k: int
    gamma: float


class AcceptanceFit(TypedDict):
    """The acceptance the model uses: per-position rates at the horizon, the windows pooled,
    tokens per draft by k, and how often a drafter finds full-length drafts at each k."""

    horizon: int
    per_position_rate: list[float]
    windows: list[str]
    drafts: float
    accepted_per_pos: list[float]
    tokens_per_draft: list[float]
    draft_availability: list[Availability]


class StepModelFit(TypedDict):
    terms: list[str]
    coef: list[float]
    observations: int
    rms_rel_error_pct: float
    max_rel_error_pct: float


class FitError(TypedDict):
    median_abs: float
    max_abs: float


class SpeculativeConfig(TypedDict):
    """The schedule as vLLM's speculative_config takes it: bands [lo, hi, k]."""

    num_speculative_tokens: int
    num_speculative_tokens_per_batch_size: list[list[int]]


class PredictedVsMeasured(TypedDict):
    """A verification run's throughput at an arm's k against the prediction there."""

    arm: str
    concurrency: int
    k: int
    predicted: float
    interval: list[float] | None
    measured: float
    error_pct: float


class PredictedChange(TypedDict):
    """A verification run's candidate-against-control change at a concurrency: predicted and
    measured, each with its interval."""

    concurrency: int
    control_k: int
    k: int
    predicted_pct: float
    predicted_interval: list[float] | None
    measured_pct: float
    measured_interval: list[float] | None
    difference_pct: float
