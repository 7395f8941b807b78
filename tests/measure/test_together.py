"""Simultaneous order on the host: the two sessions of a pair meet before every window and
start it at the same moment; `knee pair` runs both and stops the one left when the other
fails, keeping what a finished one measured. Sessions are stand-in processes here; the
embedded engine runs the real thing in tests/workflow/test_simultaneous.py."""

import itertools
import multiprocessing
import sys
import time

import pytest

from knee.core import jsonio
from knee.core.errors import KneeError
from knee.measure import together
from knee.plan import config, configfile
from tests.helpers import ROOT


def info(sid: str, partner: str) -> dict:
    return {"id": sid, "pair": 1, "together": partner}


def _meet(root, sid, partner, delay, out):
    time.sleep(delay)
    met = together.meet(root, info(sid, partner), "sweep", 30)
    out.put((sid, time.time(), met))


def test_both_sessions_start_the_window_at_the_same_moment(tmp_path):
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_meet, args=(tmp_path, "1-control", "1-candidate", 0.0, out)),
             ctx.Process(target=_meet, args=(tmp_path, "1-candidate", "1-control", 0.6, out))]
    for p in procs:
        p.start()
    got = {sid: (back, met) for sid, back, met in (out.get(timeout=30) for _ in procs)}
    for p in procs:
        p.join(10)
    control, candidate = got["1-control"][1], got["1-candidate"][1]
    assert control["start"] == candidate["start"]
    assert control["partner"] == "1-candidate" and candidate["partner"] == "1-control"
    # each was ready at start - waited; the start is the later of the two plus the lead, and
    # the candidate, which slept 0.6 s first, was the later
    ready = {sid: met["start"] - met["waited_s"] for sid, (_, met) in got.items()}
    assert ready["1-candidate"] - ready["1-control"] > 0.5
    assert control["start"] == pytest.approx(ready["1-candidate"] + together.LEAD_S, abs=1e-5)
    for back, met in got.values():  # neither went on before the common start
        assert back >= met["start"]


def test_a_partner_that_never_comes_is_named(tmp_path):
    with pytest.raises(KneeError, match=r"session 1-control: its partner 1-candidate was not "
                                        r"ready for the sweep window within 0 s"):
        together.meet(tmp_path, info("1-control", "1-candidate"), "sweep", 0.2)


@pytest.fixture
def pair_plan(tmp_path):
    cfg = configfile.load(ROOT / "config" / "config.yaml")
    cfg["protocol"]["order"] = "simultaneous"
    cfg["runtime"].pop("engine_cpus", None)
    cfg["runtime"]["arm_cpus"] = [[0], [1]]
    plan = config.make_plan(config.validate(cfg, "x.yaml"), "x.yaml")
    jsonio.write(tmp_path / "plan.json", "plan", plan)
    return tmp_path / "plan.json"


def stand_ins(monkeypatch, scripts: dict[str, str]) -> None:
    monkeypatch.setattr(together, "session_argv", lambda plan, sid, python, info:
                        [sys.executable, "-c", scripts[sid]])


def test_a_pair_whose_sessions_both_finish_passes(pair_plan, monkeypatch):
    stand_ins(monkeypatch, {"1-control": "pass", "1-candidate": "import time; time.sleep(0.5)"})
    together.run_pair(pair_plan, 1, "python", None)
    assert not together.meeting_dir(pair_plan.parent, 1).exists()


def test_when_one_session_fails_the_other_is_stopped_at_once(pair_plan, monkeypatch):
    stand_ins(monkeypatch, {"1-control": "import time; time.sleep(120)",
                            "1-candidate": "import sys, time; time.sleep(0.5); sys.exit(3)"})
    began = time.monotonic()
    with pytest.raises(KneeError, match=r"pair 1: 1-candidate exited 3; the pair is measured "
                                        r"together or not at all"):
        together.run_pair(pair_plan, 1, "python", None)
    assert time.monotonic() - began < 30


def test_a_session_that_finished_beside_a_failed_one_is_kept_aside(pair_plan, monkeypatch):
    root = pair_plan.parent
    wrote = (f"import pathlib; r = pathlib.Path({str(root)!r}); "
             "(r / 'raw/1-control').mkdir(parents=True); "
             "(r / 'raw/1-control/sweep.json.gz').write_bytes(b'x'); "
             "(r / 'receipts').mkdir(); (r / 'receipts/1-control-stop.json').write_text('{}')")
    stand_ins(monkeypatch, {"1-control": wrote,
                            "1-candidate": "import sys, time; time.sleep(1.5); sys.exit(2)"})
    with pytest.raises(KneeError, match=r"1-candidate exited 2"):
        together.run_pair(pair_plan, 1, "python", None)
    assert not (root / "raw" / "1-control").exists()
    kept = list((root / "failed").glob("1-control-unpaired-*"))
    assert len(kept) == 1
    assert (kept[0] / "raw" / "1-control" / "sweep.json.gz").read_bytes() == b"x"
    assert (kept[0] / "receipts" / "1-control-stop.json").is_file()


def test_a_pair_of_a_sequential_plan_is_refused(tmp_path):
    plan = config.make_plan(config.validate(configfile.load(ROOT / "config" / "config.yaml"),
                                            "x.yaml"), "x.yaml")
    jsonio.write(tmp_path / "plan.json", "plan", plan)
    with pytest.raises(KneeError, match=r"pair 1 is not a pair of simultaneous sessions"):
        together.run_pair(tmp_path / "plan.json", 1, "python", None)


def _take_turns(root, arm, units, out):
    """A stand-in session: `units` turns of a window, each a short busy spell."""
    sid, partner = f"1-{arm}", "1-candidate" if arm == "control" else "1-control"
    turns = together.Turns(root, {"id": sid, "pair": 1, "arm": arm, "together": partner},
                           "fixture", 11, 30)
    for k in range(units):
        turns.take(f"request {k}")
        time.sleep(0.002 + 0.004 * ((k * 7 + len(arm)) % 3))
        turns.release()
    out.put((arm, turns.log))


def test_interleaved_arms_take_their_turns_in_the_registered_abba_order(tmp_path):
    from knee.analyze.together import turn_agreement
    from knee.plan.together import position

    together.meeting_dir(tmp_path, 1).mkdir(parents=True)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_take_turns, args=(tmp_path, arm, 24, out))
             for arm in ("control", "candidate")]
    for p in procs:
        p.start()
    logs = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(10)
    # one after the other, never both at once, in the order the seed drew
    ordered = sorted((t[2], t[3], arm, t[0], t[1]) for arm, ts in logs.items() for t in ts)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ordered))
    assert [(arm, unit) for _, _, arm, unit, _ in ordered] == [
        (arm, unit) for unit in range(24)
        for arm in sorted(("control", "candidate"),
                          key=lambda a: position(11, 1, "fixture", unit, a))]
    got = turn_agreement(logs, 11, 1, "fixture")
    assert got["units"] == {"control": 24, "candidate": 24}
    assert got["as_registered"] and got["concurrent_s"] == 0
    assert 0 <= got["handoff_s"] < 0.05


def test_a_partner_sending_other_units_is_named(tmp_path):
    where = together.meeting_dir(tmp_path, 1)
    where.mkdir(parents=True)
    from knee.plan.together import position

    arm = next(a for a in ("control", "candidate") if position(11, 1, "sweep", 0, a) == 1)
    partner = "1-candidate" if arm == "control" else "1-control"
    (where / "sweep.step.0").write_text("0 loop c=8 n=40\n")
    turns = together.Turns(tmp_path, {"id": f"1-{arm}", "pair": 1, "arm": arm,
                                      "together": partner}, "sweep", 11, 5)
    with pytest.raises(KneeError, match=rf"session 1-{arm}: in the sweep window its partner "
                                        rf"{partner} sent '0 loop c=8 n=40' where this session "
                                        r"sends '0 loop c=8 n=48': interleaved arms must send "
                                        r"the same units in the same order"):
        turns.take("loop c=8 n=48")


def test_a_partner_that_never_ends_its_turn_is_named(tmp_path):
    from knee.plan.together import position

    together.meeting_dir(tmp_path, 1).mkdir(parents=True)
    arm = next(a for a in ("control", "candidate") if position(11, 1, "sweep", 0, a) == 1)
    turns = together.Turns(tmp_path, {"id": f"1-{arm}", "pair": 1, "arm": arm,
                                      "together": "x"}, "sweep", 11, 0.2)
    with pytest.raises(KneeError, match=r"its partner x did not end its turn 0 of the sweep "
                                        r"window within 0 s"):
        turns.take("loop c=8 n=48")


def test_the_second_set_boots_once_the_first_has(tmp_path):
    together.meeting_dir(tmp_path, 1).mkdir(parents=True)
    first = {"id": "1-candidate", "pair": 1, "set": 1, "together": "1-control"}
    second = {"id": "1-control", "pair": 1, "set": 2, "together": "1-candidate"}
    together.boot_turn(tmp_path, first, 0.1)  # set 1 boots at once
    with pytest.raises(KneeError, match=r"session 1-control: its partner 1-candidate had not "
                                        r"booted within 0 s"):
        together.boot_turn(tmp_path, second, 0.2)
    together.booted(tmp_path, first)
    together.boot_turn(tmp_path, second, 0.1)
