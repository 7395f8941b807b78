"""Whether both arms generated the same tokens for the same requests, per point, and a bar that
registers max_divergent_share calling different work CONFOUNDED."""

import hashlib

import pytest

from knee.analyze import bar, samework


def record(index: int, ids: list[int] | None, warmup: bool = False, error=None) -> dict:
    digest = hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest() if ids else None
    return {"index": index, "warmup": warmup, "error": error, "output_tokens": len(ids or []),
            "output_token_ids": ids, "output_sha256": digest,
            "finish_reason": "stop" if ids and len(ids) == 2 else "length"}


def sessions(control: list[list[int]], candidate: list[list[int]], pairs: int = 2) -> dict:
    def raw(outputs):
        return {"fixture": {"points": [{"point": "code", "run": 1, "records": [
            record(i, ids) for i, ids in enumerate(outputs)] + [record(99, [1], warmup=True)]}]}}
    return {(p, arm): {"raw": raw(out)} for p in range(1, pairs + 1)
            for arm, out in (("control", control), ("candidate", candidate))}


def test_identical_tokens_in_both_arms_are_the_same_work():
    same = sessions([[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 5]])
    (row,) = samework.section(same)["same_work"]
    assert row == {"instrument": "fixture", "point": "code", "paired": 4, "identical": 4,
                   "identical_share": 1.0, "first_difference_median": None, "divergent": [],
                   "ended_at_eos": {"control": 0.5, "candidate": 0.5}}


def test_different_tokens_are_counted_with_their_first_differing_position():
    apart = sessions([[1, 2, 3], [4, 5, 6]], [[1, 2, 9], [4, 5]])
    (row,) = samework.section(apart)["same_work"]
    assert row["identical"] == 0 and row["identical_share"] == 0.0
    # a shorter answer differs where it ends
    assert [d["first_difference"] for d in row["divergent"]] == [3, 3, 3, 3]
    assert row["divergent"][0] == {"pair": 1, "run": 1, "index": 0, "first_difference": 3}


def test_requests_without_a_digest_are_not_judged():
    old = sessions([[1]], [[2]])
    for s in old.values():
        for r in s["raw"]["fixture"]["points"][0]["records"]:
            r.pop("output_sha256")
    assert samework.section(old) == {}


@pytest.mark.parametrize("share, confounded", [(None, False), (0.5, False), (0.2, True)])
def test_a_registered_max_divergent_share_makes_different_work_confounded(share, confounded):
    half = sessions([[1, 2], [3, 4]], [[1, 2], [3, 9]])
    comparison = {"experiment": "x", "verdict": "VALID", "rows": [], **samework.section(half)}
    rules = {"alpha": 0.05, "rules": []}
    if share is not None:
        rules["max_divergent_share"] = share
    out = bar.judge(comparison, rules, pairs=2, bar_sha256="h", measured_bar_sha256={"h"})
    assert (out["verdict"] == "CONFOUNDED") is confounded
    if confounded:
        (found,) = out["confounds"]
        assert found["kind"] == "output tokens"
        assert found["what"] == ("fixture point code: 2 of 4 paired requests generated different "
                                 "tokens (50.0 %, above the registered max_divergent_share 20 %), "
                                 "first difference at token 2 (median)")


@pytest.mark.parametrize("share, confounded", [({"fixture": 0.2}, True),
                                               ({"fixture": 0.5}, False),
                                               ({"sweep": 0.0}, False)])
def test_a_share_per_instrument_judges_only_the_instruments_it_names(share, confounded):
    """Where the change itself changes the sampled tokens at C8 (it proposes otherwise there)
    but not single stream, the bar registers a share for the fixture alone."""
    half = sessions([[1, 2], [3, 4]], [[1, 2], [3, 9]])
    comparison = {"experiment": "x", "verdict": "VALID", "rows": [], **samework.section(half)}
    rules = {"alpha": 0.05, "rules": [], "max_divergent_share": share}
    out = bar.judge(comparison, rules, pairs=2, bar_sha256="h", measured_bar_sha256={"h"})
    assert (out["verdict"] == "CONFOUNDED") is confounded
    if confounded:
        assert "above the registered max_divergent_share 20 %" in out["confounds"][0]["what"]


def test_the_readme_says_whether_the_arms_did_the_same_work():
    from knee.publish import readme

    same = samework.section(sessions([[1, 2], [3]], [[1, 2], [3]]))["same_work"]
    assert readme.same_work_lines(same) == [
        "Both arms generated identical tokens for every one of the 4 paired requests, over 1 "
        "points ([comparison.json](comparison/comparison.json#/same_work)).",
        "Requests that ended at end-of-sequence, not at max_tokens (control / candidate): "
        "fixture code 50 % / 50 % ([comparison.json](comparison/comparison.json#/same_work))."]
    half = samework.section(sessions([[1, 2], [3, 4]], [[1, 2], [3, 9]]))["same_work"]
    assert readme.same_work_lines(half)[1:] == [
        "fixture point code: 2 of 4 paired requests generated identical tokens in both arms "
        "(50.0 %); the others first differ at token 2 (median) "
        "([comparison.json](comparison/comparison.json#/same_work))."]
    assert readme.same_work_lines([]) == []
