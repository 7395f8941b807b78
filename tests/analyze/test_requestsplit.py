"""Single-stream noise split request by request, and `knee design --pilot` planned from it:
simulations of known truth (a request's noise and a per-boot offset, each known), the published
shared-CPU interleaved A/A, and the pilots the planner refuses."""

import math
import random

import pytest

from knee.analyze import inference, requestsplit
from knee.analyze.adjust import pilot
from knee.core.errors import KneeError
from knee.plan import config, configfile
from tests.helpers import ROOT, run_knee

ALPHA = 0.05


def simulate(rng: random.Random, pairs: int, requests: int, request_sd: float,
             boot: float) -> dict[int, list[float]]:
    """Each pair's log ratios: a per-pair offset (SD boot) plus each request's own (SD
    request_sd), both in % of the log."""
    out = {}
    for p in range(1, pairs + 1):
        offset = rng.gauss(0, boot / 100)
        out[p] = [offset + rng.gauss(0, request_sd / 100) for _ in range(requests)]
    return out


@pytest.mark.parametrize("boot", [0.0, 2.0])
def test_the_split_recovers_a_known_requests_noise_and_boot_part(boot):
    rng = random.Random(11)
    got = [requestsplit.split(simulate(rng, 12, 32, 20.0, boot)) for _ in range(300)]
    request_sd = sum(g["request_sd"] for g in got) / len(got)
    assert abs(request_sd - 20.0) < 0.3
    assert all(math.isclose(g["predicted"], g["request_sd"] / math.sqrt(32)) for g in got)
    # the pairs' measured variance is the requests' share plus the boot part's, on average
    variance = sum(g["measured"] ** 2 for g in got) / len(got)
    assert abs(variance - (boot ** 2 + 20.0 ** 2 / 32)) < 0.12 * (boot ** 2 + 20.0 ** 2 / 32)
    assert all(g["boot"] == math.sqrt(max(g["measured"] ** 2 - g["predicted"] ** 2, 0.0))
               for g in got)


def test_under_two_pairs_or_single_requests_there_is_no_split():
    assert requestsplit.split({1: [0.1, 0.2]}) is None
    assert requestsplit.split({1: [0.1], 2: [0.2]}) is None
    assert requestsplit.split({1: [0.1, 0.3], 2: [0.2, 0.2]})["pairs"] == 2


def test_the_same_work_is_the_same_tokens_else_the_same_cut_length():
    tokens = {"output_sha256": "a", "finish_reason": "stop", "output_tokens": 9}
    assert requestsplit.same_work(tokens, dict(tokens))
    assert not requestsplit.same_work(tokens, {**tokens, "output_sha256": "b"})
    assert not requestsplit.same_work(tokens, {**tokens, "output_sha256": None})
    cut = {"finish_reason": "length", "output_tokens": 128}
    assert requestsplit.same_work(cut, dict(cut))
    assert not requestsplit.same_work(cut, {**cut, "output_tokens": 127})
    # ended at end-of-sequence with no tokens recorded: nothing says the work was the same
    stop = {**cut, "finish_reason": "stop"}
    assert not requestsplit.same_work(stop, dict(stop))


def test_a_plan_from_a_pilots_upper_bound_reaches_its_target_as_promised():
    """Known truth: 20 % a request, a 1 % boot part; pilots of 8 pairs of 32 requests. Of the
    protocols planned at the noise's upper bound, at least about LEVEL reach the target MDE at
    the true noise; of those planned from the noise as estimated, far fewer."""
    rng = random.Random(5)
    truth, requests_sd = 1.0, 20.0
    rules, costs, target = {"single-stream parity": 4}, pilot.Costs(200.0, 1.0, 4), 3.0
    planned, reached = {True: 0, False: 0}, {True: 0, False: 0}
    for _ in range(120):
        split = requestsplit.split(simulate(rng, 8, 32, requests_sd, truth))
        for bound in (True, False):
            best = pilot.cheapest(split, rules, ALPHA, target, costs, bound)
            if best is None:
                continue
            sd = math.sqrt((truth / 100) ** 2 + (requests_sd / 100) ** 2 / (4 * best["requests"]))
            planned[bound] += 1
            reached[bound] += inference.mde_pct(
                inference.Effect(best["pairs"], 0.0, sd), ALPHA) <= target
    assert planned[True] > 100 and reached[True] >= 0.85 * planned[True]
    assert reached[False] < 0.75 * planned[False]


def test_the_published_shared_cpu_pilot_plans_requests_and_names_what_it_cannot_plan():
    cfg = config.load(ROOT / "config" / "qwen-aa-interleaved-shared-h200.yaml")
    root = ROOT / "results" / "qwen-aa-interleaved-shared-h100"
    out = pilot.plan_from_pilot(root, cfg, 4.0)
    split = out["split"]
    assert split["pairs"] == 4 and 20 < split["request_sd"] < 22 and split["boot"] < 0.5
    assert 0.9 < out["request_s"] < 1.1 and out["classes"] == {"single-stream parity": 4}
    assert set(out["skipped"]) == {"C8 parity", "C16 parity"}
    # the config as it ran: its predicted MDE's estimate lies near the MDE the A/A realized
    # (5.95 %), and the bound far above it: 4 pairs bound a boot part only loosely
    low, high = out["config"]["mde_pct"]["single-stream parity"]
    assert out["config"]["pairs"] == 4 and out["config"]["requests"] == 8
    assert 5.0 < low < 7.5 < 12 < high
    best = out["best"]
    assert best and best["mde_pct"]["single-stream parity"][1] <= 4.0
    assert "requests: " + str(best["requests"]) in pilot.protocol_block(best)
    assert "not planned: C8 parity" in pilot.report(out) and out["notes"] == []
    # the same pilot for a config whose control drafts otherwise: planned, and said
    other = config.load(ROOT / "config" / "qwen-aa-interleaved-shared-h200.yaml")
    other["server"]["speculative_config"]["num_speculative_tokens"] = 3
    notes = pilot.plan_from_pilot(root, other, 4.0)["notes"]
    assert notes and "speculative_config.num_speculative_tokens: 4 there, 3 here" in notes[0]


@pytest.mark.parametrize("config_name,folder,what", [
    ("qwen-aa-sequential-h200.yaml", "qwen-aa-interleaved-shared-h100", "protocol.order"),
    ("qwen-draft-h200.yaml", "qwen-draft-h100", "variable"),
    ("k7v4.yaml", "aa-cpu", "model.name"),
])
def test_a_pilot_of_another_server_order_or_an_ab_is_refused(config_name, folder, what):
    cfg = config.load(ROOT / "config" / config_name)
    with pytest.raises(KneeError, match=what):
        pilot.plan_from_pilot(ROOT / "results" / folder, cfg, 3.0)


def test_knee_design_takes_a_calibration_or_a_pilot_as_a_user_runs_it(tmp_path):
    cfg = ROOT / "config" / "qwen-aa-interleaved-shared-h200.yaml"
    aa = ROOT / "results" / "qwen-aa-interleaved-shared-h100"
    for given in ([], ["--pilot", aa, "--calibration", ROOT / "config" / "calibration"
                                                        / "h200-35b.json"]):
        r = run_knee("design", *given, "--config", cfg, "--mde", "3")
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert "give --calibration (a knee calibrate file) or --pilot" in r.stderr
    block = tmp_path / "protocol.yaml"
    r = run_knee("design", "--pilot", aa, "--config", cfg, "--mde", "4", "--out", block)
    assert r.returncode == 0, r.stderr
    assert "boot part 0.00%" in r.stdout and "planned: " in r.stdout
    assert set(configfile.load(block)) == {"protocol", "instruments"}
    assert configfile.load(block)["instruments"]["fixture"]["requests"] >= 1
    # 4 pairs bound the boot part too loosely for 1.5 %: said, and nothing to paste
    r = run_knee("design", "--pilot", aa, "--config", cfg, "--mde", "1.5", "--out",
                 tmp_path / "none.yaml")
    assert r.returncode == 1 and "no protocol up to 40 pairs and 512 requests" in r.stdout
    assert not (tmp_path / "none.yaml").exists()


def test_an_aa_readme_names_the_lever_its_split_shows():
    """comparison.json holds the split the raw files give, and an A/A's README says whether
    more requests or more pairs narrow it."""
    from knee.analyze.folder import load_sessions
    from knee.core import jsonio

    for name, lever in (("qwen-aa-interleaved-shared-h100", "The requests dominate"),
                        ("aa-h200-35b-pinned", "The boot part dominates")):
        root = ROOT / "results" / name
        held = jsonio.read(root / "comparison" / "comparison.json", "comparison")
        sessions = load_sessions(jsonio.read(root / "plan.json", "plan"), root)
        assert held["request_split"] == requestsplit.section(sessions)["request_split"]
        readme = (root / "README.md").read_text()
        assert lever in readme and "comparison.json#/request_split" in readme
    # an A/B says nothing of it in its README: its spread is not all noise
    assert "request by request" not in (ROOT / "results" / "qwen-draft-h100" / "README.md"
                                        ).read_text()


def test_a_pair_costs_every_class_both_arms_send_whatever_a_rule_pools():
    split = {"pairs": 4, "requests": 32.0, "request_sd": 20.0, "request_df": 124,
             "predicted": 3.54, "measured": 3.5, "boot": 0.0}
    costs = pilot.Costs(fixed_s=100.0, request_s=1.0, classes=4)
    pooled = pilot.price(split, {"all classes": 4}, ALPHA, 5, 10, costs)
    one = pilot.price(split, {"shell only": 1}, ALPHA, 5, 10, costs)
    # 5 pairs x (100 s + 2 arms x 10 requests x 4 classes x 1 s) = 900 s
    assert pooled["gpu_minutes"] == one["gpu_minutes"] == 15.0
    # a rule on one class rests on a quarter of the requests
    assert one["mde_pct"]["shell only"][0] > 1.9 * pooled["mde_pct"]["all classes"][0]


def test_a_pilot_receipt_whose_time_is_not_a_time_is_named(tmp_path):
    import json
    import shutil

    root = tmp_path / "aa"
    shutil.copytree(ROOT / "results" / "qwen-aa-interleaved-shared-h100", root)
    boot = root / "receipts" / "2-control-boot.json"
    boot.write_text(json.dumps({**json.loads(boot.read_text()), "started_at": "yesterday"}))
    cfg = config.load(ROOT / "config" / "qwen-aa-interleaved-shared-h200.yaml")
    with pytest.raises(KneeError, match="session 2-control: started_at 'yesterday'"):
        pilot.plan_from_pilot(root, cfg, 4.0)
