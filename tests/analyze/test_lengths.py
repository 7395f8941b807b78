"""instruments.stop_at_eos: requests may end at the model's end-of-sequence token, the profile
says so, and the arms must generate the same length distribution; a point where they do not is
an engine-side difference, so the verdict is CONFOUNDED unless the bar expected it."""

import pytest

from knee.analyze import bar, compare, resolved
from knee.core import prompts
from tests.analyze.test_compare_bar import CANDIDATE, CONTROL, PLAN, record


def test_stop_at_eos_drops_the_forced_length_and_the_profile_records_it():
    free = prompts.sampling_params(64, stop_at_eos=True)
    assert free == {"max_tokens": 64, "temperature": 0.0, "top_p": 1.0, "ignore_eos": False}
    profile = prompts.profile(instrument="sweep", point=1, run=1, prompts=["p"], sampling=free,
                              concurrency=1, warmup=0, model={"name": "m"}, dataset="d",
                              seed=1, chunk_clock="c")
    assert profile["ignore_eos"] is False and "min_tokens" not in profile
    assert prompts.sampling_params(64)["ignore_eos"] is True


def lengths_session(server, lengths, ignore_eos=False):
    recs = [{**record(0.1, 1.1, tokens=n), "index": i} for i, n in enumerate(lengths)]
    point = {"point": 8, "run": 1, "wall_s": 1.0, "records": recs,
             "profile": {"instrument": "sweep", "point": 8, "run": 1, "requests": len(recs),
                         "concurrency": 8, "prompt_sha256": "ab" * 32, "max_tokens": 128,
                         "temperature": 0.0, "ignore_eos": ignore_eos}}
    return {"boot": {"model": {"sha256": "m"}, "engine": {"packages": {"vllm": "0.26.0"}},
                     "runtime": "process", "server": server},
            "raw": {"sweep": {"instrument": "sweep", "points": [point]}}}


SAME = [40, 128, 77, 90, 128, 12, 64, 101]


@pytest.mark.parametrize("candidate, apart", [
    (SAME, False),  # greedy text, the same lengths
    ([n + 2 for n in SAME], False),  # within 5 %
    ([n + (9 if i % 2 else -9) for i, n in enumerate(SAME)], False),  # sampled: both ways
    ([min(128, n + 30) for n in SAME], True),  # the candidate wrote longer answers
    ([128] * 8, True)])
def test_arms_that_generated_different_lengths_are_a_confound(candidate, apart):
    sessions = {(1, "control"): lengths_session(CONTROL, SAME),
                (1, "candidate"): lengths_session(CANDIDATE, candidate)}
    found = resolved.length_differences(sessions)
    assert bool(found) is apart
    result = compare.compare(PLAN, sessions)
    assert result["verdict"] == "VALID"
    assert result.get("engine_differences", []) == found
    if apart:
        assert found[0]["kind"] == "output length"
        assert found[0]["what"].startswith("sweep point 8: mean output 80.0 tokens (control) "
                                           "against ")
        assert found[0]["what"].endswith(", over the same 8 requests")
        assert bar.confounds(result, {}) == found
        # arms that did different work are not an engine setting a bar can expect: no entry,
        # a piece of its text least of all, excuses it
        for entry in ("sweep point 8", "output_tokens from 80.0 to 110.0"):
            assert bar.confounds(result, {"expected_engine_differences": [entry]}) == found


def test_forced_lengths_are_never_compared():
    sessions = {(1, "control"): lengths_session(CONTROL, SAME, ignore_eos=True),
                (1, "candidate"): lengths_session(CANDIDATE, [128] * 8, ignore_eos=True)}
    assert resolved.length_differences(sessions) == []

