"""The records knee writes and reads, one typed definition each: the keys of a file the
schema of its kind (workflow/schemas/<kind>.schema.yaml) validates, with the keys that schema
requires marked Required. `jsonio.read(path, kind)` returns the kind's record, and
tests/core/test_records.py holds each definition to its schema and to every published file.
A nested section that no module reads as a whole stays a mapping of its own (`Section`)."""

from typing import Any, Required, TypedDict

from knee.core.records.base import Config as Config
from knee.core.records.base import Point as Point
from knee.core.records.base import Section as Section
from knee.core.records.base import Stamped as Stamped
from knee.core.records.calibration import Calibration, CalibrationRef
from knee.core.records.covariate import (
    Adjustment,
    ContrastSection,
    CovariateSection,
    CpuSpeed,
    GpuClocks,
    HostSpeed,
)
from knee.core.records.engine import EngineDifference, EngineResolved, Excused
from knee.core.records.raw import InstrumentRun as InstrumentRun
from knee.core.records.raw import RawFile as RawFile
from knee.core.records.raw import RawWindow as RawWindow
from knee.core.records.raw import RequestRecord as RequestRecord
from knee.core.records.recommendation import (
    AcceptanceFit,
    BestAt,
    CeilingRow,
    Crossover,
    FitError,
    MeasuredFit,
    Prediction,
    ResampleInterval,
    SpeculativeConfig,
    StepModelFit,
    ThroughputKnee,
    VerifyGain,
)
from knee.core.records.sampling import ArmPooled, SamplingCheck, SessionRejudged, SessionsAt
from knee.core.records.together import Interleaved, Simultaneous
from knee.core.records.verdict import (
    Family,
    HostsSection,
    PairEffect,
    RequestSplit,
    Robustness,
)
from knee.core.records.window import CounterDisagreement, NotHeld
from knee.core.records.window import WindowMetrics as WindowMetrics


class BarRule(TypedDict, total=False):
    """A rule of the bar as the config registers it (config.schema.yaml's bar.rules): the
    figure it judges and its kind's threshold (knee.core.rulekinds)."""

    name: Required[str]
    instrument: Required[str]
    metric: Required[str]
    point: Required[Point]
    within_pct: float
    min_gain_pct: float


class PlanBar(TypedDict, total=False):
    """The bar as the plan registers it (hashed into bar_sha256)."""

    alpha: Required[float]
    rules: Required[list[BarRule]]
    adjust: Section
    expected_engine_differences: list[str]
    # above it, paired requests whose tokens differ confound: one share, or per instrument
    max_divergent_share: float | dict[str, float]


class PlannedSession(TypedDict, total=False):
    """A session as the plan orders it: its id (PAIR-ARM), pair, arm and the session it boots
    after; in simultaneous or interleaved order its partner, its set and its CPUs (and, in
    simultaneous order, its GPUs)."""

    id: Required[str]
    pair: Required[int]
    arm: Required[str]
    after: Required[str | None]
    together: str
    set: int
    cpus: list[int]
    gpus: list[int]


class PlanProtocol(TypedDict, total=False):
    """The realized protocol: the sessions in boot order, written before the first boot."""

    pairs: Required[int | Section]
    order: Required[str | list[str]]
    seed: Required[int]
    sessions: Required[list[PlannedSession]]
    stopping: str


class Plan(Stamped, total=False):
    """plan.json: the experiment as it will be measured (the config resolved, the order
    realized, the bar and its sha256)."""

    name: Required[str]
    question: str
    license: str
    config_file: str
    config_sha256: Required[str]
    bar_sha256: Required[str]
    variable: Required[str | list[str]]
    arms: Required[dict[str, Section]]
    model: Required[Section]
    drafts: dict[str, Section]
    datasets: dict[str, Section]
    runtime: Required[Section]
    protocol: Required[PlanProtocol]
    instruments: Required[Section]
    analysis: Required[Section]
    bar: Required[PlanBar]
    workflow: Section
    prediction: Section
    calibration: CalibrationRef


class IdleSpeed(TypedDict):
    """A boot's idle probe (knee.measure.host.speed.idle_probe): its seconds, and per CPU the
    median, 10th and 90th percentile and count of the samples."""

    seconds: float
    cpu_speed: dict[str, CpuSpeed]


class BootReceipt(Stamped, total=False):
    """receipts/<session>-boot.json: what booted, with what, where."""

    experiment: Required[str]
    session: Required[str]
    pair: Required[int]
    arm: Required[str]
    runtime: Required[Section]
    boot_seconds: Required[float]
    endpoint: Required[str]
    argv: Required[list[str]]
    env: Required[dict[str, str]]
    server: Required[Section]
    model: Required[Section]
    engine: Required[Section]
    hardware: Required[Section]
    compile_cache: Required[Section]
    config_sha256: str
    bar_sha256: str
    cpus: Section
    scheduler: Section
    started_at: str
    workflow: Section
    external: Section
    image_digest: str
    listening: list[Section]
    env_inherited: list[str]
    engine_resolved: EngineResolved
    sampling_check: list[SamplingCheck]
    idle_speed: IdleSpeed


class StopReceipt(Stamped, total=False):
    """receipts/<session>-stop.json: how the session ended."""

    experiment: Required[str]
    session: Required[str]
    completed: Required[bool]
    exit_status: Required[int | None]
    killed: bool
    died_before_stop: bool
    log: str
    stop_seconds: float
    stopped_at: str
    raw_sha256: dict[str, str]
    resources: Section


class SessionRaw(TypedDict):
    """What reading a session's windows takes of it: each instrument's raw file."""

    raw: dict[str, RawFile]


class LoadedSession(SessionRaw):
    """A session as a results folder's reader loads it (knee.analyze.folder.load_sessions): its
    boot receipt, each instrument's raw file, and the paths it read them from."""

    boot: BootReceipt
    files: dict[str, str]


class RowInterval(TypedDict, total=False):
    """A comparison row's interval: over the requests of one pair, or over the pairs (with
    their count and each pair's effect)."""

    interval: Required[list[float] | None]
    interval_level: Required[str]  # boot pairs, or requests within one boot pair
    confidence: Required[float]
    pairs: int
    per_pair_delta_pct: list[float | None]


class ComparisonRow(TypedDict, total=False):
    """One (instrument, metric, point) of comparison.json: the arms' medians and the per-pair
    effect's interval."""

    instrument: Required[str]
    metric: Required[str]
    point: Required[Point]
    control: Required[float | None]
    candidate: Required[float | None]
    delta_pct: Required[float | None]
    interval: Required[list[float] | None]
    interval_level: Required[str]  # boot pairs, or requests within one boot pair
    confidence: Required[float]
    noise: Required[str]
    noise_pct: Required[float | None]
    pair: Required[int | str]  # a pair, or "all": across the pairs
    pairs: int
    per_pair_delta_pct: list[float | None]


class Divergent(TypedDict):
    """A paired request whose arms generated different tokens, and the first position where."""

    pair: int
    run: int
    index: int
    first_difference: int | None


class SameWorkRow(TypedDict):
    """One point of comparison.json's same_work: the paired requests and how many generated
    identical output tokens in both arms (knee.analyze.samework)."""

    instrument: str
    point: str
    paired: int
    identical: int
    identical_share: float
    first_difference_median: float | None
    ended_at_eos: dict[str, float]
    divergent: list[Divergent]


class LatencyRow(TypedDict):
    """One instrument, point and arm of comparison.json's latency: time to first token and
    inter-token latency at p50, p90 and p99, in seconds (knee.analyze.latency)."""

    instrument: str
    point: Point
    arm: str
    requests: int
    ttft_s_p50: float | None
    ttft_s_p90: float | None
    ttft_s_p99: float | None
    itl_s_p50: float | None
    itl_s_p90: float | None
    itl_s_p99: float | None


class Comparison(Stamped, total=False):
    """comparison/comparison.json."""

    experiment: Required[str]
    verdict: Required[str]
    fields_checked: Required[list[str]]
    mismatches: Required[list[Section]]
    rows: Required[list[ComparisonRow]]
    interval_method: Required[str]
    variable: Any
    noise_method: str
    host_flags: list[str]
    gpu: GpuClocks
    engine_differences: list[EngineDifference]
    same_work: list[SameWorkRow]
    request_split: RequestSplit
    windows_not_held: list[NotHeld]
    latency: list[LatencyRow]
    covariate: CovariateSection
    host_speed: HostSpeed
    fixture_classes: Any
    depth_curves: Any
    sampling_withheld: list[SessionsAt]
    sampling_undecided: list[SessionsAt]
    sampling_pooled: list[ArmPooled]
    sampling_rejudged: list[SessionRejudged]
    simultaneous: Simultaneous
    interleaved: Interleaved
    # a verification run's predicted against measured (knee.analyze.verification)
    prediction: Section
    # windows whose raw records disagree with the server's counters (none: no key)
    counter_disagreements: list[CounterDisagreement]


class Judged(TypedDict, total=False):
    """A rule's decision on an effect over pairs (knee.analyze.bar.judged): its verdict, the
    interval it used, the smallest effect it could see and the pairs it would need."""

    verdict: Required[str]
    estimate: Required[float | None]
    interval: Required[list[float] | None]
    interval_level: Required[str | None]
    confidence: Required[float | None]
    mde_pct: Required[float | None]
    pairs: Required[int]
    pairs_needed: Required[int | None]
    reason: str  # one pair: why there is no verdict


class RuleVerdict(TypedDict, total=False):
    """One bar rule decided: its interval against its threshold, and what it needs (an
    INVALID rule: why, and no more than the pairs it had)."""

    rule: Required[str]
    instrument: Required[str]
    metric: Required[str]
    point: Required[Point]
    verdict: Required[str]
    test: Required[str]
    estimate: float | None
    interval: list[float] | None
    interval_level: str | None
    confidence: float | None
    mde_pct: float | None
    pairs: int
    pairs_needed: int | None
    per_pair: list[PairEffect]
    reason: str
    adjustment: Adjustment
    unadjusted: Section
    robustness: Robustness


class BarVerdict(Stamped, total=False):
    """comparison/bar.json: the bar's verdict and each rule's."""

    experiment: Required[str]
    verdict: Required[str]
    bar_sha256: Required[str]
    bar_changed: Required[bool]
    alpha: Required[float]
    looks: Required[int]
    alpha_per_look: Required[float]
    pairs: Required[int]
    method: Required[str]
    rules: Required[list[RuleVerdict]]
    reason: str  # INVALID: why no rule was judged
    bar: Section
    confounds: list[EngineDifference]  # each difference between the arms the bar did not expect
    excused: list[Excused]  # each expected engine difference and the entry that excused it
    # bar.adjust: the arms' speed difference between figures' spans
    covariate_contrast: ContrastSection
    rules_verdict: str
    hosts: HostsSection
    family: Family


class Recommendation(Stamped, total=False):
    """recommend/recommendation.json: which k at which load, and why (or why not)."""

    experiment: Required[str]
    status: Required[str]
    reason: Required[str | None]
    method: Required[str]
    knee_method: Required[str]
    sweep_cpu_speed: float
    interval: ResampleInterval
    acceptance: AcceptanceFit
    step_model: StepModelFit
    allowed_ks: list[int]
    ks: list[int]
    concurrency: list[int]
    predictions: list[Prediction]
    measured: list[MeasuredFit]
    throughput_fit_error_pct: FitError
    best: list[BestAt]
    schedule: list[list[int]]
    best_fixed_k: int
    speculative_config: SpeculativeConfig
    crossover: Crossover
    knees: dict[str, ThroughputKnee]
    ceiling: list[CeilingRow]
    verify: list[VerifyGain]


# the kind of file (its schema's name) each record is
RECORDS: dict[str, type] = {
    "plan": Plan, "boot": BootReceipt, "stop": StopReceipt, "raw": RawFile,
    "metrics": WindowMetrics, "comparison": Comparison, "bar": BarVerdict,
    "recommendation": Recommendation, "calibration": Calibration,
}
