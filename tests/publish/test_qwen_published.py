"""The real draft/target pair measured on two H100 hosts (results/qwen-draft-h100 and, the same
config in a lease of its own, results/qwen-draft-h100-b), checked on a machine without a GPU:
the work both arms did, the acceptance each reached, why the bar could not decide the timing,
and that the two hosts resolve every rule alike."""

from pathlib import Path

import pytest

from knee.core import jsonio
from knee.publish import audit
from tests.helpers import ROOT

FOLDERS = [ROOT / "results" / "qwen-draft-h100", ROOT / "results" / "qwen-draft-h100-b"]
hosts = pytest.mark.parametrize("ROOT_QWEN", FOLDERS, ids=lambda p: p.name)


@hosts
def test_every_boot_ran_the_packaged_pair_on_an_h100_with_vllm_0_26(ROOT_QWEN: Path):
    plan = jsonio.read(ROOT_QWEN / "plan.json", "plan")
    assert len(plan["protocol"]["sessions"]) == 8  # 4 boot pairs
    for s in plan["protocol"]["sessions"]:
        boot = jsonio.read(ROOT_QWEN / "receipts" / f"{s['id']}-boot.json", "boot")
        assert boot["hardware"]["nvml"][0]["name"].startswith("NVIDIA H100")
        assert boot["engine"]["packages"]["vllm"] == "0.26.0"
        assert boot["model"]["packaged"]["package"] == "qwen2.5-coder-1.5b-instruct"
    problems, notes = audit.examine(ROOT_QWEN)
    assert problems == [] and not [n for n in notes if n.startswith("not possible")], notes


@hosts
def test_the_fixture_did_the_same_work_in_both_arms_and_the_sweep_did_not(ROOT_QWEN: Path):
    """Greedy fixture requests give identical tokens in both arms (16 a class a boot, ending at
    end-of-sequence as often in each); the batched sweep's do not (batch numerics), which the
    bar's max_divergent_share makes a confound; single stream, the sweep's are identical too."""
    rows = jsonio.read(ROOT_QWEN / "comparison" / "comparison.json", "comparison")["same_work"]
    fixture = [r for r in rows if r["instrument"] == "fixture"]
    assert {r["point"] for r in fixture} == {"code", "prose", "shell", "tool_json"}
    for r in fixture:
        assert r["paired"] == 64 and r["identical_share"] == 1.0
        assert r["ended_at_eos"]["control"] == r["ended_at_eos"]["candidate"] > 0.5
    sweep = {r["point"]: r["identical_share"] for r in rows if r["instrument"] == "sweep"}
    assert sweep["1"] == 1.0  # one request at a time: the same tokens
    assert 0.5 < sweep["8"] < 0.9 and 0.5 < sweep["16"] < 0.9
    bar = jsonio.read(ROOT_QWEN / "comparison" / "bar.json", "bar")
    assert bar["verdict"] == "CONFOUNDED" and bar["rules_verdict"] == "FAIL"
    assert {d["kind"] for d in bar["confounds"]} == {"output tokens", "engine change"}


@hosts
def test_the_draft_model_accepts_more_than_ngram_in_every_class(ROOT_QWEN: Path):
    """Acceptance length per class and arm over the 4 boots: the 0.5B drafts 4.8 tokens a step
    on code and tool JSON, ngram at most 3.7; prose is where both accept least."""
    over = jsonio.read(ROOT_QWEN / "comparison" / "acceptance.json", "acceptance")["over_boots"]
    length = {(o["arm"], o["point"]): o["length_mean"] for o in over}
    for point in ("code", "prose", "shell", "tool_json"):
        assert length["candidate", point] > length["control", point]
        assert all(o["boots"] == 4 and o["length_interval"] for o in over if o["point"] == point)
    assert min(length["candidate", "code"], length["candidate", "tool_json"]) > 4.7
    assert length["candidate", "prose"] == min(v for (a, _), v in length.items()
                                               if a == "candidate")


def test_the_two_hosts_resolve_every_rule_alike_on_the_same_work():
    """Every rule that resolves on both hosts resolves the same way (here: each FAILs on
    both), and the work was the same: each arm's acceptance length per class is equal."""
    bars = [jsonio.read(f / "comparison" / "bar.json", "bar") for f in FOLDERS]
    verdicts = [{r["rule"]: r["verdict"] for r in b["rules"]} for b in bars]
    assert verdicts[0].keys() == verdicts[1].keys()
    resolved = [r for r in verdicts[0] if {v[r] for v in verdicts} <= {"PASS", "FAIL"}]
    assert resolved == list(verdicts[0])  # none left undecided on either host
    assert [verdicts[0][r] for r in resolved] == [verdicts[1][r] for r in resolved]
    lengths = [{(o["arm"], o["point"]): round(o["length_mean"], 3) for o in jsonio.read(
        f / "comparison" / "acceptance.json", "acceptance")["over_boots"]} for f in FOLDERS]
    assert lengths[0] == lengths[1]
