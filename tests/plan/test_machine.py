"""What a config needs of the machine that boots it (engine CPUs, both arms' sets, the engine
Python) is checked where sessions boot and on request, never where a folder is planned or
re-rendered: a GPU host's config validates on any machine."""

from __future__ import annotations

import copy

import pytest
import yaml

from knee import cli
from knee.core.errors import KneeError
from knee.measure import preboot
from knee.plan import places
from tests.helpers import ROOT


def gpu_config(tmp_path, **runtime) -> str:
    cfg = yaml.safe_load((ROOT / "config" / "k7v4-h200.yaml").read_text())
    cfg = copy.deepcopy(cfg) | {"name": "machine-check"}
    cfg["runtime"].update(runtime)
    path = tmp_path / "gpu.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_a_gpu_hosts_config_validates_here_and_is_refused_with_here(tmp_path, capsys):
    path = gpu_config(tmp_path, engine={"python": "/nonexistent/bin/python3"})
    assert cli.main(["validate-config", path]) == 0, capsys.readouterr().err
    assert cli.main(["validate-config", "--here", path]) == 1
    err = capsys.readouterr().err
    assert f"{path}: runtime.engine.python: '/nonexistent/bin/python3' is not an executable " \
           "file on this machine" in err


def test_cpus_this_machine_lacks_are_refused_with_here(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1})
    path = gpu_config(tmp_path, engine_cpus=[0, 999])
    assert cli.main(["validate-config", path]) == 0
    capsys.readouterr()
    assert cli.main(["validate-config", "--here", path]) == 1
    assert r"runtime.engine_cpus[1]: CPU 999 is not one this machine lets knee use ([0, 1])" \
        in capsys.readouterr().err


@pytest.mark.parametrize("rt, expect", [
    ({"engine_cpus": [7]}, r"plan.json: runtime.engine_cpus\[0\]: CPU 7 is not one"),
    ({"arm_cpus": [[0], [7]]}, r"runtime.arm_cpus\[1\]\[0\]: CPU 7 is not one"),
    ({"engine": {"python": "/nonexistent/python3"}},
     r"runtime.engine.python: '/nonexistent/python3' is not an executable file")])
def test_a_session_checks_the_machine_before_it_boots(rt, expect, monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1})
    plan = {"arms": {"control": {}}, "runtime": rt, "model": {"generated": True}}
    with pytest.raises(KneeError, match=expect):
        preboot.preflight(plan, "control")  # type: ignore[arg-type]
    with pytest.raises(KneeError, match=expect.replace("plan.json", "x.yaml")):
        places.check_here({"runtime": rt}, "x.yaml")
