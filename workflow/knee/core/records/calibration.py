"""A calibration (calibration.schema.yaml): what `knee calibrate` writes
(knee.analyze.adjust.calibration), a config registers with bar.adjust, the plan embeds
(knee.plan.adjust) and the protocol planner reads (knee.analyze.adjust.design)."""

from typing import Required, TypedDict

from knee.core.records.base import Stamped


class Facts(TypedDict, total=False):
    """What a calibration holds for (knee.plan.adjust.FACTS)."""

    model: Required[str | None]
    engine: Required[str | None]
    gpu: Required[str | None]
    cpu_model: Required[str | None]
    cpus: Required[int | None]
    covariate_cpus: str  # where the host speed was sampled (older calibrations lack it)


class LeftOut(TypedDict):
    """A figure's boot noise with each boot left out of the fit that predicts it."""

    unadjusted_cv_pct: float
    adjusted_cv_pct: float
    variance_ratio: float | None


class RunComponents(TypedDict):
    """A figure that is a mean over sweep runs: its run-to-run and between-boot noise."""

    runs: int
    within_cv_pct: float
    between_cv_pct: float


class Fit(TypedDict, total=False):
    """The slope of a log figure on the log covariate within groups of identical servers,
    the noise left with and without it, and where the figure is a mean over sweep runs, that
    noise's components."""

    boots: Required[int]
    groups: Required[int]
    slope: Required[float]
    slope_se: float | None
    r2: float | None
    unadjusted_cv_pct: Required[float]
    adjusted_cv_pct: Required[float]
    left_out: Required[LeftOut]
    runs: RunComponents


class Figure(Fit):
    """One bar figure's fit, named by its instrument, metric and point."""

    instrument: str
    metric: str
    point: str
    rule: str
    speed_over: list[str]


class Costs(TypedDict, total=False):
    """What a session of the calibration's first folder cost: its boot (warm and cold compile
    cache), the whole session, one sweep run by point and the rest (fixed), in seconds."""

    boot_s: Required[float]
    cold_boot_s: float | None
    session_s: Required[float | None]
    run_s: Required[dict[str, float]]
    runs: Required[dict[str, int]]
    requests_per_stream: int | None
    fixed_s: Required[float | None]


class Withheld(TypedDict):
    """Sessions of one folder whose figures knee withholds at one temperature, and why."""

    folder: str
    temperature: float | str
    why: str
    sessions: list[str]


class FolderBoots(TypedDict):
    name: str
    boots: int


class Calibration(Stamped, total=False):
    """The calibration file."""

    covariate: Required[str]
    method: Required[str]
    facts: Required[Facts]
    folders: Required[list[FolderBoots]]
    figures: Required[list[Figure]]
    costs: Required[Costs]
    withheld: list[Withheld]
    timing_only: list[Withheld]


class CalibrationRef(TypedDict):
    """The calibration a plan registers (plan.json's calibration): its file as the config
    named it, its sha256 and its content."""

    file: str
    sha256: str
    document: Calibration
