"""Hostile input, round four, by class: names made from a folder's content stay in the folder,
`knee calibrate` checks its folders as the audit does, a calibration is read as a config is
read, an expected engine difference names one setting, the meeting of two sessions bounds what
it trusts, and a closed pipe or an interrupt ends a command with the right words. Each refusal
names the file, key or value, with no traceback, and nothing from outside the folder is read
or printed."""

import json
import math
import shutil
import subprocess
import time
from dataclasses import replace

import pytest

from knee import cli
from knee.analyze import bar as barmod
from knee.analyze.adjust import calibration, design
from knee.commands.publish import audit as audit_command
from knee.core import jsonio, layout
from knee.core.errors import KneeError
from knee.measure import together
from knee.plan import adjust, config, configfile
from knee.publish import trace
from tests.helpers import KNEE, ROOT, run_knee

CANARY = "knee-canary-outside-the-folder-4d1e"
PUBLISHED = ROOT / "config" / "calibration" / "h200-35b.json"


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "smollm2-cpu"
    shutil.copytree(ROOT / "results" / "smollm2-cpu", root)
    return root


def outside(tmp_path) -> None:
    """Files beside the folder that a name leading out of it would reach, each holding the
    canary: a boot receipt and a raw folder as a session id of ../outside/1-control finds."""
    beside = tmp_path / "outside"
    (beside / "raw" / "1-control").mkdir(parents=True)
    for p in [beside / "1-control-boot.json", beside / "raw" / "1-control" / "fixture.json"]:
        p.write_text(json.dumps({"argv": [CANARY]}))


def edit(path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def refused(r, *expect):
    said = r.stdout + r.stderr
    assert r.returncode != 0, said[-2000:]
    assert "Traceback" not in said and CANARY not in said, said[-2000:]
    for e in expect:
        assert e in said, said[-2000:]
    return said


# class 1: names a folder's content builds


def test_a_session_id_that_leads_out_of_the_folder_is_refused_before_anything_is_read(
        folder, tmp_path):
    outside(tmp_path)
    edit(folder / "plan.json", lambda p: p["protocol"]["sessions"][0].update(
        id="../../outside/1-control"))
    for cmd in (("audit", folder), ("trace", folder, "C8"),
                ("calibrate", folder, "--out", tmp_path / "c.json")):
        refused(run_knee(*cmd), "protocol.sessions[0].id", "../../outside/1-control")
    assert not (tmp_path / "c.json").exists()


def test_a_session_id_that_is_not_its_pair_and_arm_is_refused(folder):
    edit(folder / "plan.json", lambda p: p["protocol"]["sessions"][0].update(id="2-candidate"))
    refused(run_knee("audit", folder), "protocol.sessions[0].id '2-candidate' is not its pair "
                                       "and arm (1-")


def test_the_layout_makes_no_path_of_a_name_that_is_not_one():
    assert layout.receipt("12-control", "boot") == "receipts/12-control-boot.json"
    assert layout.metrics("{sid}", "{instrument}") == "raw/{sid}/{instrument}.metrics.json"
    assert layout.receipt("{pair}-control", "stop") == "receipts/{pair}-control-stop.json"
    for bad in ("../x", "1-control/../../y", "/etc/passwd", "1-other", 7, "0-control"):
        with pytest.raises(KneeError, match="is not a session id"):
            layout.raw_dir(bad)
    with pytest.raises(KneeError, match="is not an instrument's name"):
        layout.metrics("1-control", "../../fixture")


@pytest.mark.parametrize("field,value,expect", [
    ("pair", "../../outside", "pair '../../outside' is not a pair this folder measured"),
    ("pair", 99, "pair 99 is not a pair this folder measured"),
    ("instrument", "../../outside/x", "instrument '../../outside/x' is not one the plan runs"),
])
def test_trace_holds_the_fields_it_resolves_to_the_plan(folder, tmp_path, field, value, expect):
    outside(tmp_path)
    edit(folder / layout.COMPARISON, lambda c: c["rows"][0].update({field: value}))
    with pytest.raises(KneeError, match=expect):
        trace.trace(folder, f"{layout.COMPARISON}#/rows/0/instrument")


def test_trace_of_a_file_outside_or_a_pointer_to_a_list_or_past_its_end(folder):
    with pytest.raises(KneeError, match="leads outside"):
        trace.trace(folder, "raw/../../outside/1-control/fixture.json#/argv")
    whole = trace.trace(folder, f"{layout.COMPARISON}#/rows")
    assert whole[0].startswith(f"(given) -> {layout.COMPARISON}#/rows = [{{")
    with pytest.raises(KneeError, match="no such value"):
        trace.trace(folder, f"{layout.BAR}#/rules/0/per_pair/999")
    with pytest.raises(KneeError, match="no such value"):
        trace.trace(folder, f"{layout.COMPARISON}#/rows/999")


# class 2: knee calibrate reads folders as the audit does


@pytest.fixture
def aa(tmp_path):
    root = tmp_path / "calib-h200-35b"
    shutil.copytree(ROOT / "results" / "calib-h200-35b", root)
    return root


def test_calibrate_refuses_a_raw_file_that_links_out_of_its_folder(aa, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"x": CANARY}))
    raw = next((aa / "raw" / "1-control").glob("fixture.json*"))
    raw.unlink()
    raw.symlink_to(secret)
    out = tmp_path / "c.json"
    refused(run_knee("calibrate", aa, "--out", out), f"{raw.name} is a symbolic link")
    assert not out.exists()


def test_calibrate_refuses_a_folder_given_twice_or_a_copy_of_one(aa, tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(KneeError, match="again: each folder is read once"):
        calibration.calibrate([aa, tmp_path / "x" / ".." / aa.name])
    copy = tmp_path / "copy"
    shutil.copytree(aa, copy)
    with pytest.raises(KneeError, match=r"session 1-\w+ of experiment 'calib-h200-35b' .* is "
                                        r"in .*calib-h200-35b and in .*copy"):
        calibration.calibrate([copy, aa])


# classes 3, 4, 5, 6 and 9: a calibration is read as a config is


def calibration_file(tmp_path, change=None, text=None):
    path = tmp_path / "cal.json"
    if text is None:
        doc = json.loads(PUBLISHED.read_text())
        if change:
            change(doc)
        text = json.dumps(doc)
    path.write_text(text)
    return path


def adjusted_config(tmp_path, cal) -> str:
    cfg = configfile.load(ROOT / "config" / "ksched-h200-35b-adj.yaml")
    cfg["name"] = "hostile-cal"
    cfg["bar"]["adjust"]["calibration"] = str(cal)
    path = tmp_path / "hostile-cal.yaml"
    path.write_text(json.dumps(cfg))
    return path


def figure0(key, value):
    def change(doc):
        node = doc["figures"][0]
        *head, last = key.split(".")
        for k in head:
            node = node[k]
        node[last] = value
    return change


def literal(text):
    """The published file with the first figure's left-out noise written as `text`."""
    return PUBLISHED.read_text().replace('"adjusted_cv_pct": 1.093', f'"adjusted_cv_pct": {text}')


@pytest.mark.parametrize("change,expect", [
    (literal("NaN"), "NaN is not a number knee writes"),
    (literal("1e999"), "1e999 is beyond a float's range"),
    (figure0("left_out.adjusted_cv_pct", -1.1), "figures[0].left_out.adjusted_cv_pct: -1.1"),
    (figure0("left_out.adjusted_cv_pct", "text"), "figures[0].left_out.adjusted_cv_pct: 'text'"),
    (figure0("runs", {"runs": 0, "within_cv_pct": 1.0, "between_cv_pct": 1.0}),
     "figures[0].runs.runs: 0"),
    (lambda d: d["costs"].update(run_s=[1, 2]), "costs.run_s: [1, 2]"),
    (lambda d: d["folders"][0].update(name="<img src=x onerror=alert(1)>|[a](http://x)"),
     "folders[0].name"),
    (lambda d: d["figures"].append(dict(d["figures"][0], slope=0.5)),
     "two figures for fixture/decode_rate_p50/all"),
    (lambda d: d["facts"].update(model="hf_" + "Qm7cR2xLp9Vt4Kz8Nw3Bj6Hs1Dy5Fg0Ua"),
     "facts.model looks like a credential"),
])
def test_a_calibration_is_refused_by_validate_config_and_by_design_naming_the_key(
        tmp_path, change, expect):
    cal = calibration_file(tmp_path, text=change) if isinstance(change, str) \
        else calibration_file(tmp_path, change)
    said = refused(run_knee("validate-config", adjusted_config(tmp_path, cal)), expect)
    assert "Qm7cR2xLp9" not in said
    said = refused(run_knee("design", "--calibration", cal, "--config",
                            ROOT / "config" / "ksched-h200-35b.yaml", "--mde", "1.5"), expect)
    assert "cal.json" in said and "Qm7cR2xLp9" not in said


def test_a_calibration_over_a_config_s_size_is_refused_unread(tmp_path):
    cal = calibration_file(tmp_path, lambda d: d.update(method="x" * (2 << 20)))
    refused(run_knee("validate-config", adjusted_config(tmp_path, cal)),
            f"over the {configfile.MAX_BYTES} a file may hold")


def test_a_calibration_is_hashed_from_the_bytes_it_was_read_from_and_recorded_relative(
        tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    cal = calibration_file(tmp_path)
    cfg = configfile.load(adjusted_config(tmp_path, cal))
    plan = config.make_plan(config.validate(cfg), "x")
    assert plan["calibration"]["sha256"] == jsonio.sha256_file(cal)
    assert plan["calibration"]["file"] == "cal.json"  # outside the repository: its name
    assert adjust.shown_path(PUBLISHED) == "config/calibration/h200-35b.json"


def test_design_without_a_session_cost_says_so():
    doc = jsonio.read(PUBLISHED, "calibration")
    doc["costs"]["fixed_s"] = None
    with pytest.raises(KneeError, match=r"no session cost \(costs.fixed_s is null"):
        design.plan_protocol(doc, configfile.load(ROOT / "config" / "ksched-h200-35b.yaml"),
                             1.5)


def test_a_plan_whose_embedded_calibration_is_not_one_is_refused(tmp_path):
    root = tmp_path / "adj"
    shutil.copytree(ROOT / "results" / "ksched-h200-35b-adj", root)
    edit(root / "plan.json", lambda p: p["calibration"]["document"]["folders"][0].update(
        name="<b>x</b>"))
    refused(run_knee("audit", root), "plan.json#/calibration/document: folders[0].name")


# class 7: an expected engine difference names one setting


@pytest.mark.parametrize("entry", ["   ", "the", "cudagraph_mode", "mode from A",
                                   "Async scheduling disabled"])
def test_an_expected_difference_that_names_no_setting_is_refused(tmp_path, entry):
    cfg = configfile.load(ROOT / "config" / "config.yaml")
    cfg["bar"]["expected_engine_differences"] = [entry]
    with pytest.raises(KneeError, match=r"bar.expected_engine_differences\[0\]"):
        config.validate(cfg)


VLLM = ("Dynamic speculative decoding changes the target verification length at runtime. "
        "Overriding cudagraph_mode from FULL_AND_PIECEWISE to PIECEWISE for reliability.")


def test_an_expected_difference_excuses_only_its_own_setting_and_bar_json_says_which():
    comparison = {"engine_differences": [
        {"kind": "engine change", "arms": ["candidate"], "what": VLLM},
        {"kind": "engine argument", "arms": ["control", "candidate"],
         "what": "max_num_seqs: control 16, candidate 8", "setting": "max_num_seqs from 16 to 8"}]}
    expected = ["cudagraph_mode from FULL_AND_PIECEWISE to PIECEWISE"]
    bar = {"expected_engine_differences": expected}
    assert barmod.excused(comparison, bar) == [{"what": VLLM, "by": expected[0]}]
    assert [d["kind"] for d in barmod.confounds(comparison, bar)] == ["engine argument"]
    bar["expected_engine_differences"] += ["max_num_seqs from 16 to 8"]
    assert barmod.confounds(comparison, bar) == []
    # a piece of the text is no longer enough: another value of the setting is a confound
    bar = {"expected_engine_differences": ["cudagraph_mode from FULL_AND_PIECEWISE to NONE"]}
    assert len(barmod.confounds(comparison, bar)) == 2
    # a change the engine states in no NAME from A to B is expected by its whole sentence,
    # as vLLM 0.26.0 logged it on an H100 for the draft model (results/qwen-draft-h100)
    said = ("Async scheduling not supported with draft_model-based speculative decoding and "
            "will be disabled.")
    change = {"engine_differences": [{"kind": "engine change", "arms": ["candidate"],
                                      "what": said}]}
    cfg = configfile.load(ROOT / "config" / "config.yaml")
    cfg["bar"]["expected_engine_differences"] = [said]
    config.validate(cfg)  # a sentence of the engine's is a valid entry
    assert barmod.confounds(change, {"expected_engine_differences": [said]}) == []
    assert barmod.confounds(change, {"expected_engine_differences": [said[:-1] + " x."]}) != []


# class 8: the meeting of two sessions


@pytest.mark.parametrize("written,expect", [
    (f"{time.time() + 86400 * 60:.6f}\n", "s from now; a partner writes the time it is ready"),
    ("soon\n", "'soon' is not the time its partner was ready"),
    ("nan\n", "nan s from now"),
    ("9" * 100, "100 bytes, over the 64 a file may hold"),
])
def test_a_partner_time_far_ahead_or_not_a_time_is_refused_at_once(tmp_path, written, expect):
    info = {"id": "1-control", "together": "1-candidate", "pair": 1}
    where = together.meeting_dir(tmp_path, 1)
    where.mkdir(parents=True)
    (where / "fixture.1-candidate").write_text(written)
    t0 = time.monotonic()
    with pytest.raises(KneeError, match=expect):
        together.meet(tmp_path, info, "fixture", 5)
    assert time.monotonic() - t0 < 2


def test_a_partner_ready_now_is_met_within_a_second(tmp_path):
    info = {"id": "1-control", "together": "1-candidate", "pair": 1}
    where = together.meeting_dir(tmp_path, 1)
    where.mkdir(parents=True)
    (where / "fixture.1-candidate").write_text(f"{time.time():.6f}\n")
    t0 = time.monotonic()
    met = together.meet(tmp_path, info, "fixture", 5)
    assert time.monotonic() - t0 < 1 and met["partner"] == "1-candidate"


# class 10 and the interrupt


def test_a_closed_output_pipe_ends_quietly(folder):
    query = "raw/1-control/fixture.json.gz#"  # the whole raw file
    assert len("\n".join(trace.trace(folder, query))) > 1 << 17  # more than a pipe holds
    p = subprocess.run(f"{' '.join(KNEE)} trace {folder} '{query}' | head -c 1", shell=True,
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.stdout == "(" and "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, \
        p.stderr


def test_an_interrupted_command_that_booted_nothing_does_not_say_it_stopped_an_engine(
        monkeypatch, capsys):
    def interrupted(_args):
        raise KeyboardInterrupt("signal SIGINT")
    monkeypatch.setattr(audit_command, "COMMAND", replace(audit_command.COMMAND, run=interrupted))
    assert cli.main(["audit", "x"]) == 130
    assert capsys.readouterr().err == "knee audit: interrupted (signal SIGINT)\n"


# round three, still open


def test_an_integer_of_hundreds_of_digits_in_a_boot_receipt_is_named(folder):
    path = folder / layout.receipt("1-control", "boot")
    path.write_text(path.read_text().replace('"boot_seconds": ', '"boot_seconds": ' + "9" * 400
                                             + ', "boot_x": ', 1))
    refused(run_knee("audit", folder), "1-control-boot.json: not JSON (an integer of 400 digits")


def test_an_engine_argv_over_the_limit_names_its_longest_flag():
    cfg = configfile.load(ROOT / "config" / "config.yaml")
    flags = ["additional-config", "hf-overrides", "override-generation-config",
             "mm-processor-kwargs", "model-loader-extra-config", "media-io-kwargs",
             "default-chat-template-kwargs", "kernel-config", "engram-config",
             "kv-events-config", "eplb-config", "profiler-config"]
    for i, flag in enumerate(flags):  # each a JSON word of 120 KB, under the limit of one word
        cfg["server"]["args"][flag] = {"k": ["x" * 4000] * (30 - i)}
    with pytest.raises(KneeError, match=r"arms.control: the engine's arguments are \d+ bytes "
                                        r"together, over the 1048576 .* the longest: "
                                        r"--additional-config \(1\d{5} bytes\)"):
        config.make_plan(config.validate(cfg), "x")


def test_json_numbers_knee_never_writes_are_refused_by_name():
    for text, expect in (("NaN", "NaN is not a number knee writes"),
                         ("-Infinity", "-Infinity is not a number knee writes"),
                         ("1e400", "beyond a float's range"),
                         ("1" * 20, "an integer of 20 digits")):
        with pytest.raises(ValueError, match=expect):
            jsonio.loads(text)
    assert jsonio.loads("[1.5e300, 1234567890123456789, -0.0]")[1] == 1234567890123456789
    assert math.isfinite(jsonio.loads("1.5e300"))
