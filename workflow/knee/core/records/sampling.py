"""A boot's sampling check (knee.measure.samplecheck sends it, knee.analyze.sampling judges
it): each temperature's verdict with the sampled requests it rests on, as the boot receipt
keeps them, and what a comparison says of them."""

from typing import Required, TypedDict


class SampledRequest(TypedDict, total=False):
    """One seeded request's sampled tokens: each one's log-probability, the 20 likeliest
    log-probabilities at its position and whether it was among them."""

    seed: Required[int]
    text: Required[str]
    tokens: list[str]
    token_logprobs: Required[list[float]]
    top_logprobs: Required[list[list[float]]]
    in_top: Required[list[bool]]
    repeat_text: str  # the first request sent again with its seed: the same text, or not


class Tail(TypedDict):
    """How many sampled tokens lie outside the 20 likeliest, against the most sampling leaves
    there (None where no bound follows)."""

    outside_top: int
    outside_top_expected: float | None
    tail_sd: float | None


class SamplingCheck(TypedDict, total=False):
    """One temperature's verdict (knee.analyze.sampling.judge), with the records it rests on
    where a receipt keeps it. A check whose requests were not answered has its temperature,
    cut, failure and reason alone; a receipt of the first check (older folders) has the keys
    of its method (expected and observed NLL) instead of the estimate's."""

    temperature: Required[float]
    passed: Required[bool | None]
    why: Required[str | None]
    method: str
    top_k: int
    top_p: float
    logprobs_mode: str
    requests: int
    tokens: int
    positions: int
    t_hat: float | None
    t_se: float | None
    t_limit: float | None
    violations: int
    outside_top: int
    outside_top_expected: float | None
    tail_sd: float | None
    z_limit: float
    repeatable: bool
    records: list[SampledRequest]
    # the first check's
    expected_nll: float | None
    observed_nll: float | None
    excess_limit: float | None
    top_tokens: int
    z: float | None


class Pooled(TypedDict):
    """One arm's estimate at a temperature over every distinct draw of its boots' checks."""

    temperature: float
    boots: int
    draws: int
    tokens: int
    t_hat: float | None
    t_se: float | None
    t_limit: float | None
    passed: bool | None
    why: str | None


class Rejudged(TypedDict):
    """A temperature whose receipt recorded another verdict than its records give today."""

    temperature: float
    recorded: bool | None
    rejudged: bool | None
    why: str | None


class ArmPooled(Pooled):
    """A pooled estimate, with the arm whose boots it pools."""

    arm: str


class SessionRejudged(Rejudged):
    """A rejudged temperature, with the session whose receipt it is."""

    session: str


class SessionsAt(TypedDict):
    """The sessions whose figures sampled at a temperature are withheld (or undecided), and
    why."""

    temperature: float
    sessions: list[str]
    why: str
