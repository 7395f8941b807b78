"""The parts of a bar rule's verdict (knee.analyze.bar, knee.analyze.robust): each pair's
effect, the registered adjustment the rules are judged with, the rule judged again by other
readings of the same effects, and what combining the rules does to the bar's error rates."""

from typing import NotRequired, Required, TypedDict


class PairEffect(TypedDict):
    """One pair's figure in each arm and the candidate's change against the control."""

    pair: int
    control: float | None
    candidate: float | None
    delta_pct: float | None


class RegisteredAdjust(TypedDict, total=False):
    """The adjustment a plan registers, as the bar applies it: each rule's slope and the
    tolerance of the balance check; withheld (why) where the arm contrast was not shown zero."""

    tolerance_pct: Required[float]
    slopes: Required[dict[str, float]]
    withheld: str


class TVerdict(TypedDict):
    """A rule decided on a t interval over some effects."""

    verdict: str
    estimate: float
    interval: list[float] | None


class Dropped(TVerdict):
    """The rule without one pair."""

    pair: int


class OverHosts(TVerdict):
    """The rule over the hosts' mean effects."""

    hosts: int


class OverSets(TVerdict):
    """The rule on the effects fitted with the candidate's set as a second term (the arms swap
    sets between pairs), and that term: the set-2 arm against the set-1 arm (%)."""

    set_effect: float
    set_interval: list[float]


class RankVerdict(TypedDict):
    """The rule on the Hodges-Lehmann estimate and the exact signed-rank interval (no interval
    or verdict where the pairs are too few)."""

    estimate: float
    interval: list[float] | None
    verdict: str | None


class Robustness(TypedDict):
    """One judged rule read again on the same per-pair effects; fragile where any reading
    decides otherwise, and why."""

    leave_one_out: list[Dropped] | None
    rank: RankVerdict
    by_host: OverHosts | None
    by_set: NotRequired[OverSets | None]  # only where the arms swap sets between pairs
    fragile: bool
    why: list[str]


class Family(TypedDict):
    """The bar's error rates from combining its rules."""

    rules: int
    fail_error_at_most: float
    pass_error_at_most: float
    statement: str


class HostPairs(TypedDict):
    """A host (its boot id) and the pairs it measured whole."""

    boot_id: str
    pairs: list[int]


class SplitPair(TypedDict):
    """A pair whose two sessions ran on different hosts, in the order they ran."""

    pair: int
    hosts: list[str]


class HostSpread(TypedDict):
    """The SD over one host's own pairs of a rule's per-pair effect, as measured and as the
    verdict used it (None with fewer than two pairs)."""

    boot_id: str
    pairs: int
    sd_pct: float | None
    sd_used_pct: float | None


class WithoutSplit(TypedDict):
    """A rule judged again without its split pairs (deciding nothing)."""

    pairs: int
    verdict: str
    estimate: float | None
    interval: list[float] | None


class HostRule(TypedDict, total=False):
    """One rule over the hosts: each host's spread and, where pairs were split, the rule
    without them."""

    rule: Required[str]
    adjusted: Required[bool]
    per_host: Required[list[HostSpread]]
    without_split_pairs: WithoutSplit


class HostsSection(TypedDict):
    """bar.json's hosts: a folder measured on several hosts (knee.analyze.hosts)."""

    hosts: list[HostPairs]
    split_pairs: list[SplitPair]
    rules: list[HostRule]


class RequestSplit(TypedDict):
    """comparison.json's request_split (knee.analyze.requestsplit): the paired single-stream
    figure's noise, request by request; every SD in % of the log ratio."""

    pairs: int
    requests: float  # the mean number of requests paired a pair
    request_sd: float  # the pooled within-pair SD of one request's log ratio
    request_df: int  # its degrees of freedom: the requests less one mean a pair
    predicted: float  # request_sd / √requests: the pairs' spread were it all requests
    measured: float  # the sample SD of the pairs' mean log ratio
    boot: float  # √(max(measured² − predicted², 0)): the per-boot offset's part
