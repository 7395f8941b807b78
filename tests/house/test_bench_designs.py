"""The designs bench: each A/A folder's between-pair CV (the spread of its pairs' effects) and
MDE per bar rule, with the folder's protocol order."""

import importlib.util
import math
import shutil
import statistics

from knee.core import jsonio
from tests.helpers import ROOT

SPEC = importlib.util.spec_from_file_location("designs", ROOT / "bench" / "designs.py")
designs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(designs)


def test_each_rule_gets_the_spread_of_its_pairs_effects_and_its_mde():
    root = ROOT / "results" / "calib-h200-35b"
    bar = jsonio.read(root / "comparison" / "bar.json", "bar")
    got = designs.rows(root)
    assert [r["rule"] for r in got] == [r["rule"] for r in bar["rules"]]
    for row, rule in zip(got, bar["rules"], strict=True):
        deltas = [p["delta_pct"] for p in rule["per_pair"]]
        assert row["cv"] == statistics.stdev(deltas) and row["pairs"] == len(deltas) == 4
        assert row["mde"] == rule["mde_pct"] and row["design"] == "counterbalanced"


def test_one_pair_has_no_spread():
    assert designs.between_pair_cv({"per_pair": [{"delta_pct": 1.0}]}) is None


def test_one_boots_spread_is_taken_around_each_arms_own_mean():

    rule = {"per_pair": [{"control": 100.0, "candidate": 200.0},
                         {"control": 110.0, "candidate": 220.0},
                         {"control": 90.0, "candidate": 180.0}]}
    # the arms differ by 2x and it is not spread: each arm's boots spread alike
    want = statistics.stdev([math.log(v) for v in (100.0, 110.0, 90.0)])
    assert math.isclose(designs.boot_cv(rule), 100 * want)
    assert designs.boot_cv({"per_pair": rule["per_pair"][:1]}) is None
    got = designs.rows(ROOT / "results" / "qwen-aa-interleaved-h100")
    single = next(r for r in got if r["rule"] == "single-stream parity")
    # interleaved on a CPU set per arm: the pairs' effects spread as if the arms shared nothing
    assert single["design"] == "interleaved" and single["cv"] > math.sqrt(2) * single["boot_cv"]


def test_interleaved_on_shared_cpus_the_arms_share_the_hosts_drift():
    """The published A/A on the same CPUs: every rule's pairs spread under a third of what
    independent arms would (√2 times one boot's spread around its arm's mean), where the
    same order on a CPU set per arm spread as if the arms shared nothing."""

    for r in designs.rows(ROOT / "results" / "qwen-aa-interleaved-shared-h100"):
        assert r["design"] == "interleaved" and r["pairs"] == 4
        assert r["cv"] < 0.35 * math.sqrt(2) * r["boot_cv"], r


def test_request_matched_split_names_a_boot_component_where_there_is_one():
    """Single stream, request by request: on shared CPUs the pairs spread as their requests
    predict (no boot component left: only more requests narrow them); on a CPU set per arm
    they spread far wider than that (the halves drifted apart between boots)."""

    shared = designs.request_split(ROOT / "results" / "qwen-aa-interleaved-shared-h100", 0.7)
    assert shared["pairs"] == 4 and 31 <= shared["requests"] <= 32
    assert 0.7 < shared["measured"] / shared["predicted"] < 1.3, shared
    assert shared["needed"] == math.ceil((shared["request_sd"] / 0.7) ** 2) > 500
    halves = designs.request_split(ROOT / "results" / "qwen-aa-interleaved-h100", 0.7)
    assert halves["measured"] > 2 * halves["predicted"], halves
    # sequential boots of a GPU-bound 35B-shaped model: each request's noise is a tenth of the
    # CPU-paced 1.5B's, and a per-boot offset dominates the pairs' spread
    sequential = designs.request_split(ROOT / "results" / "ksched-h200-35b-adj", 0.7)
    assert sequential["pairs"] == 14 and sequential["request_sd"] < 0.15 * shared["request_sd"]
    assert sequential["measured"] > 3 * sequential["predicted"], sequential
    assert shared["boot"] < 0.5 < 2 < sequential["boot"] < sequential["measured"]


def test_a_later_design_is_set_against_the_first_by_an_f_test_of_the_pairs_spread():
    """The variance ratio of the first folder's pairs to a later one's, rule by rule, with the
    one-sided F test's p: at 4 pairs each (3 and 3 degrees of freedom) a ratio of 9.28 is the
    5 % point; equal spreads give p one half; a folder of one pair has none."""
    rows = [{"folder": "seq", "rule": "r", "pairs": 4, "cv": math.sqrt(9.277)},
            {"folder": "int", "rule": "r", "pairs": 4, "cv": 1.0},
            {"folder": "same", "rule": "r", "pairs": 4, "cv": math.sqrt(9.277)},
            {"folder": "one", "rule": "r", "pairs": 1, "cv": None}]
    got = {r["folder"]: r for r in designs.against_first(rows)}
    assert set(got) == {"int", "same", "one"}
    assert math.isclose(got["int"]["ratio"], 9.277) and abs(got["int"]["p"] - 0.05) < 1e-3
    assert math.isclose(got["same"]["p"], 0.5)
    assert got["one"]["ratio"] is None and got["one"]["p"] is None


def test_on_one_kind_of_host_the_same_minutes_order_narrows_what_the_sequential_one_spreads():
    """The published A/As of the CPU-paced 1.5B on H100 hosts: one after the other, a per-boot
    offset dominates the pairs' single-stream spread; in the same minutes on the same CPUs none
    is left, and the pairs spread less single stream and at C8 (F test at 5 %), not at C16."""
    seq = designs.request_split(ROOT / "results" / "qwen-aa-sequential-h100", 0.7)
    assert seq["pairs"] == 4 and seq["measured"] > 2 * seq["predicted"] and seq["boot"] > 5, seq
    out = [r for name in ("qwen-aa-sequential-h100", "qwen-aa-interleaved-shared-h100")
           for r in designs.rows(ROOT / "results" / name)]
    got = {r["rule"]: r for r in designs.against_first(out)}
    assert got["single-stream parity"]["p"] < 0.05 and got["C8 parity"]["p"] < 0.05, got
    assert got["C16 parity"]["p"] > 0.5, got


def test_a_folder_still_being_measured_is_read_from_the_pairs_it_measured(tmp_path):
    """Without comparison/bar.json, each rule's pairs come from the raw files as the bar
    computes them: a finished folder's raw files alone give its bar's spread; with pair 4's
    last session unfinished, the first 3 pairs, said in the design."""
    src = ROOT / "results" / "qwen-aa-interleaved-shared-h100"
    root = tmp_path / src.name
    root.mkdir()
    for part in ("plan.json", "raw", "receipts"):
        (shutil.copytree if (src / part).is_dir() else shutil.copy)(src / part, root / part)
    published = {r["rule"]: r for r in designs.rows(src)}
    for row in designs.rows(root):
        assert row["design"] == "interleaved (4 of 4)" and row["mde"] is None
        assert math.isclose(row["cv"], published[row["rule"]]["cv"], rel_tol=1e-9), row
    (root / "receipts" / "4-candidate-stop.json").unlink()
    got = designs.rows(root)
    assert {r["design"] for r in got} == {"interleaved (3 of 4)"} and got[0]["pairs"] == 3
    assert designs.request_split(root, 0.7)["pairs"] == 3


def test_a_gpu_paced_model_interleaved_is_narrower_request_by_request():
    """The 14B-shaped model the GPU paces, interleaved on shared CPUs: one request's log ratio
    spreads a fifth of the CPU-paced 1.5B's, and single stream the pairs spread under 1 %."""
    gpu = designs.request_split(ROOT / "results" / "aa-interleaved-14b-h100", 0.7)
    cpu = designs.request_split(ROOT / "results" / "qwen-aa-interleaved-shared-h100", 0.7)
    assert gpu["pairs"] == 4 and gpu["request_sd"] < 0.25 * cpu["request_sd"], gpu
    single = next(r for r in designs.rows(ROOT / "results" / "aa-interleaved-14b-h100")
                  if r["rule"] == "single-stream parity")
    assert single["cv"] < 1.0, single


def test_the_set_effect_is_the_set_2_arms_edge_signed_by_which_arm_had_it():
    """Arms swap sets between pairs: a set-2 arm 2 % faster reads +2 % where the candidate has
    set 2 and −2 % where the control has it; signed back, the effect is +2 % in every pair,
    and the pairs' mean effect, 0, is untouched. Sequential orders have no sets."""
    plan = {"protocol": {"sessions": [
        {"pair": p, "arm": arm, "set": (1 if (p % 2) == (arm == "control") else 2)}
        for p in (1, 2, 3, 4) for arm in ("control", "candidate")]}}
    rule = {"per_pair": [{"pair": p, "delta_pct": 2.0 if p % 2 else -2.0} for p in (1, 2, 3, 4)]}
    mean, half = designs.set_effect(rule, plan)
    assert math.isclose(mean, 2.0) and math.isclose(half, 0.0, abs_tol=1e-12)
    rule["per_pair"][0]["delta_pct"] = 3.0  # one pair's own noise: a width, the same sign
    mean, half = designs.set_effect(rule, plan)
    assert math.isclose(mean, 2.25) and half > 0
    assert designs.set_effect({"per_pair": rule["per_pair"][:2]}, plan) is None
    sequential = {"protocol": {"sessions": [{"pair": 1, "arm": "control"},
                                            {"pair": 1, "arm": "candidate"}]}}
    assert designs.set_effect(rule, sequential) is None


def test_in_an_ab_the_set_effect_is_fitted_beside_the_effect_not_signed_into_it():
    """An A/B whose candidate is 8 % slower, with set 2 worth +1 %: signing the effects by set
    would flip the −8 % from pair to pair and read it as spread; fitted beside a mean, the set
    term is +1 % and as narrow as the pairs' own noise, from four pairs."""
    plan = {"variable": "speculative_config.num_speculative_tokens", "protocol": {"sessions": [
        {"pair": p, "arm": arm, "set": (1 if (p % 2) == (arm == "control") else 2)}
        for p in (1, 2, 3, 4, 5, 6) for arm in ("control", "candidate")]}}
    noise = [0.1, -0.1, 0.0, 0.05, -0.05, 0.0]
    rule = {"per_pair": [{"pair": p, "delta_pct": -8.0 + (1.0 if p % 2 else -1.0) + e}
                         for p, e in enumerate(noise, start=1)]}
    mean, half = designs.set_effect(rule, plan)
    assert math.isclose(mean, 1.0, abs_tol=0.05) and 0 < half < 0.2
    aa = {"protocol": plan["protocol"]}  # read as an A/A, the effect lands in the width
    assert designs.set_effect(rule, aa)[1] > 5
    assert designs.set_effect({"per_pair": rule["per_pair"][:3]}, plan) is None


def test_run_by_run_the_same_minutes_leave_no_boot_part_where_the_sequential_order_has_one():
    """The sweep's analog of the request split, on the two Qwen A/As of one H100 host: in
    interleaved order each point's pairs spread no wider than their runs predict (no boot
    part); in sequential order C16's pairs spread beyond it, a per-boot offset that more runs
    would not remove."""
    interleaved = designs.run_split(ROOT / "results" / "qwen-aa-interleaved-h100", 1.0)
    sequential = designs.run_split(ROOT / "results" / "qwen-aa-sequential-h100", 1.0)
    assert [r["point"] for r in interleaved] == [8, 16] == [r["point"] for r in sequential]
    assert all(r["pairs"] == 4 and r["requests"] == 2 for r in interleaved + sequential)
    assert all(r["boot"] == 0 and r["measured"] < r["predicted"] for r in interleaved)
    c16 = sequential[1]
    assert c16["measured"] > c16["predicted"] and c16["boot"] > 2, c16
    assert c16["needed"] == math.ceil((c16["request_sd"] / 1.0) ** 2)


def test_windows_held_for_15_s_hold_their_concurrency_where_11_s_windows_did_not():
    """The held-window A/A's sweep windows (min_window_s 15) against the H100 A/A's fixed
    lists of about 11 s: every one of the latter held its concurrency under 90 % of its time,
    none of the former; a folder whose client recorded no share says so, not 'none under'."""
    short = {w["point"]: w for w in designs.windows(ROOT / "results" / "aa-interleaved-14b-h100")}
    held = {w["point"]: w for w in designs.windows(
        ROOT / "results" / "aa-interleaved-14b-w15-h100")}
    assert set(short) == set(held) == {8, 16}
    for point in (8, 16):
        assert short[point]["windows"] == 16 and short[point]["under"] == 16
        assert short[point]["wall_s"][1] < 13 and short[point]["held"][1] < 0.9
        assert held[point]["under"] == 0 and held[point]["wall_s"][0] >= 15
        assert held[point]["held"][0] >= 0.9 and held[point]["windows"] % 4 == 0
    older = designs.windows(ROOT / "results" / "aa-h200")
    assert older and all(w["held"] is None and w["under"] is None for w in older)


def test_measurement_time_sums_each_pair_from_its_first_boot_to_its_last_stop():
    """The GPU-paced A/A: pairs 1-3 on one host took 19.4 min from the first boot to the third
    pair's stop, pair 4 on another 7.0 min (docs/published.md); the gaps between pairs of one
    lease are seconds. An unfinished folder counts the pairs measured so far."""
    got = designs.measurement_time(ROOT / "results" / "aa-interleaved-14b-h100")
    assert got["pairs"] == 4 and abs(got["minutes"] - (19.4 + 7.0)) < 0.3, got
    assert 5.5 < got["per_pair"][0] <= got["per_pair"][1] < 7.5
    one = designs.measurement_time(ROOT / "results" / "aa-interleaved-14b-w15-h100")
    assert one["pairs"] == 1 and one["per_pair"] == (one["minutes"],) * 2
