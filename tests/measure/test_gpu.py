"""The GPU facts and samples knee reads through NVML, against a fake NVML module (CI has no
GPU; the published GPU runs show the real one)."""

import subprocess
import sys
import types

from knee.measure.host import gpu
from tests.helpers import ROOT


class NVMLError(Exception):
    pass


def fake_nvml(sm=1980, reasons=0x4) -> types.SimpleNamespace:
    """The calls knee makes, answered as an H200 answers them; ECC is not supported."""
    def no(*_):
        raise NVMLError("Not Supported")

    return types.SimpleNamespace(
        NVMLError=NVMLError, nvmlInit=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetUUID=lambda h: "GPU-0b1c",
        nvmlSystemGetDriverVersion=lambda: "580.159.04",
        nvmlSystemGetCudaDriverVersion_v2=lambda: 13000,
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=143771 * 2**20),
        nvmlDeviceGetPowerManagementLimit=lambda h: 700000,
        nvmlDeviceGetPersistenceMode=lambda h: 1,
        nvmlDeviceGetMigMode=lambda h: [0, 0],
        nvmlDeviceGetEccMode=no,
        nvmlDeviceGetMaxClockInfo=lambda h, kind: 1980,
        nvmlDeviceGetClockInfo=lambda h, kind: sm if kind == 1 else 3201,
        nvmlDeviceGetPowerUsage=lambda h: 412345,
        nvmlDeviceGetTemperature=lambda h, kind: 41,
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=66, memory=31),
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: reasons)


def test_facts_name_the_gpu_and_the_settings_that_decide_its_speed():
    assert gpu.facts(fake_nvml(), [0]) == [{
        "index": 0, "name": "NVIDIA H200", "uuid": "GPU-0b1c", "driver": "580.159.04",
        "cuda_driver": "13.0", "memory_mib": 143771, "power_limit_w": 700.0,
        "persistence_mode": 1, "mig_mode": 0, "ecc_mode": None, "max_sm_clock_mhz": 1980}]


def test_samples_are_summarised_per_window_with_the_throttle_reasons_seen():
    lib = fake_nvml()
    samples = [{"t": t, **r} for t in (1.0, 1.25, 1.5)
               for r in gpu.sample(lib, {0: "h0"})]
    samples.append({"t": 1.75, **gpu.sample(fake_nvml(sm=1500, reasons=0x1 | 0x40),
                                             {0: "h0"})[0]})
    samples.append({"t": 9.0, **gpu.sample(fake_nvml(sm=100), {0: "h0"})[0]})  # after it
    got = gpu.summary(samples, 1.0, 2.0)["gpu0"]
    assert got["samples"] == 4
    assert got["sm_clock_mhz"] == {"median": 1980.0, "min": 1500, "max": 1980}
    assert got["power_w"]["median"] == 412.3 and got["temperature_c"]["max"] == 41
    assert got["reasons"] == {"gpu_idle": 0.25, "hw_thermal_slowdown": 0.25,
                              "sw_power_cap": 0.75}


def test_without_nvml_the_session_stops_before_booting_with_what_is_missing(tmp_path):
    code = ("import sys; sys.modules['pynvml'] = None\n"
            "from knee.measure.host import gpu\n"
            "try:\n    gpu.nvml()\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert r.stdout.startswith("KneeError runtime.gpus: NVML is not readable here")
    assert "nothing was booted" in r.stdout


def test_the_cpu_default_reaches_no_gpu_code():
    """No GPU code path runs on the CPU default: its plan names no GPUs, so neither the session
    nor the comparison asks NVML anything."""
    from knee.plan import config

    plan = config.make_plan(config.load(ROOT / "config" / "config.yaml"))
    assert "gpus" not in plan["runtime"] and "engine" not in plan["runtime"]


FAKE_PYNVML = """
class NVMLError(Exception):
    pass
class _U:
    gpu, memory = 70, 30
def nvmlInit(): pass
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetClockInfo(h, kind): return 1965 if kind == 1 else 3201
def nvmlDeviceGetPowerUsage(h): return 400000
def nvmlDeviceGetTemperature(h, kind): return 40
def nvmlDeviceGetUtilizationRates(h): return _U()
def nvmlDeviceGetCurrentClocksEventReasons(h): return 0
"""


def test_the_sampler_process_samples_while_the_block_runs(tmp_path, monkeypatch):
    """The real sampler child (python -m knee.measure.host.gpu), reading a stand-in pynvml
    module."""
    import os
    import time

    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT / "workflow")]))
    with gpu.Sampler([0], interval=0.05) as s:
        t0 = time.monotonic()
        time.sleep(1.0)
        t1 = time.monotonic()
    got = s.during(t0, t1)["gpu0"]
    assert got["samples"] >= 5 and got["sm_clock_mhz"]["median"] == 1965.0
    assert got["utilization_pct"]["median"] == 70 and got["reasons"] == {}
    assert s.proc.poll() is not None  # stopped with the block


def test_only_the_process_runtimes_gpu_ids_reach_nvml():
    """docker's gpus is the container's request ("all", a count): knee reads no NVML for it."""
    assert gpu.ids({"kind": "process", "gpus": [0, 1]}) == [0, 1]
    assert gpu.ids({"kind": "docker", "gpus": "all"}) is None
    assert gpu.ids({"kind": "docker", "gpus": [0]}) is None
    assert gpu.ids({"kind": "process"}) is None


def test_a_gpu_the_host_lacks_is_refused_before_any_boot_with_what_it_has():
    """runtime.gpus [0, 2] on a host with two GPUs: NVML has no GPU 2, and the refusal says what
    the host has (two GPUs of a tensor-parallel pair, the second misnumbered)."""
    import pytest

    from knee.core.errors import KneeError

    lib = fake_nvml()

    def handle(i):
        if i >= 2:
            raise NVMLError("Invalid Argument")
        return f"h{i}"

    lib.nvmlDeviceGetHandleByIndex, lib.nvmlDeviceGetCount = handle, lambda: 2
    assert [f["index"] for f in gpu.facts(lib, [0, 1])] == [0, 1]
    with pytest.raises(KneeError, match=r"runtime.gpus: GPU 2: this host has 2 GPU\(s\), ids 0 "
                                        r"to 1 \(NVML: Invalid Argument\); nothing was booted"):
        gpu.facts(lib, [0, 2])
