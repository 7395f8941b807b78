"""What the engine says it resolved, read from the logs of the published GPU run
(tests/data/h200-engine-*.log: the first lines of results/ksched-h200's 1-control and
1-candidate engine logs, vLLM 0.26.0 on an H200), and the differences between the arms beyond
the declared variable."""

from knee.analyze import resolved
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data"
VARIABLE = "speculative_config.num_speculative_tokens_per_batch_size"
CUDAGRAPH = ("Dynamic speculative decoding changes the target verification length at runtime. "
             "Overriding cudagraph_mode from FULL_AND_PIECEWISE to PIECEWISE for reliability.")


def logged(arm: str) -> dict:
    return resolved.read((DATA / f"h200-engine-{arm}.log").read_text())


def test_the_engine_log_gives_its_non_default_args_and_its_own_changes():
    control, candidate = logged("control"), logged("candidate")
    assert control["non_default_args"]["dtype"] == "bfloat16"
    assert control["non_default_args"]["load_format"] == "dummy"
    assert candidate["non_default_args"]["speculative_config"][
        "num_speculative_tokens_per_batch_size"] == [[1, 2, 5], [3, 16, 1]]
    assert "num_speculative_tokens_per_batch_size" not in \
        control["non_default_args"]["speculative_config"]
    assert any(c.startswith(CUDAGRAPH) for c in candidate["changes"])
    assert not any("cudagraph_mode" in c for c in control["changes"])
    assert "Async scheduling not supported with ngram-based speculative decoding and will be " \
        "disabled." in control["changes"]


def boots(control: dict, candidate: dict) -> list[dict]:
    return [{"arm": "control", "engine_resolved": control},
            {"arm": "candidate", "engine_resolved": candidate}]


def test_the_cudagraph_override_is_the_one_difference_beyond_the_variable():
    found = resolved.differences(VARIABLE, boots(logged("control"), logged("candidate")))
    assert len(found) == 1 and found[0]["arms"] == ["candidate"]
    assert found[0]["kind"] == "engine change" and found[0]["what"].startswith(CUDAGRAPH)


def test_an_argument_the_arms_ran_with_differently_is_reported():
    control, candidate = logged("control"), logged("candidate")
    candidate["non_default_args"]["max_num_seqs"] = 32
    found = resolved.differences(VARIABLE, boots(control, candidate))
    assert {"kind": "engine argument", "arms": ["control", "candidate"],
            "what": "max_num_seqs: control 16, candidate 32",
            "setting": "max_num_seqs from 16 to 32"} in found


def test_the_port_and_the_variable_itself_are_not_differences():
    control = logged("control")
    other = logged("control") | {"non_default_args": {
        **control["non_default_args"], "port": 1, "speculative_config": {"method": "ngram"}}}
    assert resolved.differences("speculative_config.num_speculative_tokens", boots(
        control, other)) == []


def test_older_boots_without_what_the_engine_resolved_give_no_differences():
    assert resolved.differences(VARIABLE, [{"arm": "control"}, {"arm": "candidate"}]) == []


def test_a_credential_in_the_engine_log_never_reaches_the_receipt():
    canary = "sk-" + "Zq4R7tLm2Vx9Kp3Wn8Bj"
    text = (DATA / "h200-engine-control.log").read_text().replace(
        "'dtype': 'bfloat16'", f"'dtype': 'bfloat16', 'api_key': ['{canary}'], "
        f"'hf_token': 'plain-words-here'") + f"WARNING x [a.py:1] Disabling auth {canary}\n"
    got = resolved.read(text)
    assert canary not in repr(got) and "plain-words-here" not in repr(got)
    assert got["non_default_args"]["api_key"] == got["non_default_args"]["hf_token"]
    assert got["non_default_args"]["dtype"] == "bfloat16"
