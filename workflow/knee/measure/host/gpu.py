"""The GPUs an engine uses, read through NVML (the nvidia-ml-py package, module pynvml): their
facts for every boot receipt, and samples of their clocks, power, temperature, utilisation and
throttle reasons while every window runs. Only a plan with runtime.gpus reaches this module.

Run as `python -m knee.measure.host.gpu IDS INTERVAL`: one JSON line per GPU and sample until
terminated.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Mapping
from typing import Any

from knee.core.errors import KneeError
from knee.core.records import Section
from knee.measure.host.speed import ChildSampler
from knee.plan import runtimes

INTERVAL_S = 0.25
# nvmlClocksEventReasons (formerly throttle reasons), bit by bit
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
           0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
           0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
           0x100: "display_clock_setting"}
READINGS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "utilization_pct",
            "memory_utilization_pct")


def ids(rt: Mapping[str, Any]) -> list[int] | None:
    """The GPUs knee reads through NVML: the process runtime's runtime.gpus (device ids), from
    the runtime section `rt`. None for every other runtime (docker's gpus is the container's
    request, "all" or a count) and where no GPU is named: then no GPU code runs."""
    gpus = rt.get("gpus")
    if not (isinstance(gpus, list) and gpus):
        return None
    return list(gpus) if runtimes.of_section(rt).gpu_ids else None


def nvml() -> Any:
    """pynvml, initialised; a KneeError naming what is missing where NVML cannot be read."""
    try:
        import pynvml
    except ImportError as e:
        raise KneeError(f"runtime.gpus: NVML is not readable here: {e} (install nvidia-ml-py "
                        "where knee runs); nothing was booted") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        raise KneeError(f"runtime.gpus: NVML is not readable here ({e}); nothing was "
                        "booted") from None
    return pynvml


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ask(lib: Any, name: str, *args: object) -> Any:
    """One NVML query; None where this GPU or driver does not answer it."""
    try:
        return getattr(lib, name)(*args)
    except (lib.NVMLError, AttributeError):
        return None


def facts(lib: Any, ids: list[int]) -> list[Section]:
    """Each GPU's identity and settings that decide its speed."""
    cuda = _ask(lib, "nvmlSystemGetCudaDriverVersion_v2") or \
        _ask(lib, "nvmlSystemGetCudaDriverVersion")
    out = []
    for i in ids:
        try:
            h = lib.nvmlDeviceGetHandleByIndex(i)
        except lib.NVMLError as e:
            count = _ask(lib, "nvmlDeviceGetCount")
            has = f"this host has {count} GPU(s), ids 0 to {count - 1}" if count else \
                "NVML counts no GPU on this host"
            raise KneeError(f"runtime.gpus: GPU {i}: {has} (NVML: {e}); nothing was "
                            "booted") from None
        mem = _ask(lib, "nvmlDeviceGetMemoryInfo", h)
        limit = _ask(lib, "nvmlDeviceGetPowerManagementLimit", h)
        mig = _ask(lib, "nvmlDeviceGetMigMode", h)
        ecc = _ask(lib, "nvmlDeviceGetEccMode", h)
        out.append({
            "index": i,
            "name": _text(lib.nvmlDeviceGetName(h)),
            "uuid": _text(_ask(lib, "nvmlDeviceGetUUID", h)),
            "driver": _text(_ask(lib, "nvmlSystemGetDriverVersion")),
            "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
            "memory_mib": round(mem.total / 2**20) if mem else None,
            "power_limit_w": round(limit / 1000, 1) if limit else None,
            "persistence_mode": _ask(lib, "nvmlDeviceGetPersistenceMode", h),
            "mig_mode": next(iter(mig)) if mig else None,
            "ecc_mode": next(iter(ecc)) if ecc else None,
            "max_sm_clock_mhz": _ask(lib, "nvmlDeviceGetMaxClockInfo", h, 1),
        })
    return out


def reasons(mask: int | None) -> list[str]:
    return [name for bit, name in REASONS.items() if mask and mask & bit]


def sample(lib: Any, handles: dict[int, object]) -> list[Section]:
    """One reading of each GPU."""
    out = []
    for i, h in handles.items():
        util = _ask(lib, "nvmlDeviceGetUtilizationRates", h)
        power = _ask(lib, "nvmlDeviceGetPowerUsage", h)
        mask = _ask(lib, "nvmlDeviceGetCurrentClocksEventReasons", h)
        if mask is None:
            mask = _ask(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", h)
        out.append({"gpu": i, "sm_clock_mhz": _ask(lib, "nvmlDeviceGetClockInfo", h, 1),
                    "mem_clock_mhz": _ask(lib, "nvmlDeviceGetClockInfo", h, 2),
                    "power_w": round(power / 1000, 1) if power is not None else None,
                    "temperature_c": _ask(lib, "nvmlDeviceGetTemperature", h, 0),
                    "utilization_pct": util.gpu if util else None,
                    "memory_utilization_pct": util.memory if util else None,
                    "reasons": reasons(mask)})
    return out


def summary(samples: list[Section], t0: float, t1: float) -> Section:
    """Per GPU over [t0, t1]: median, min and max of each reading, and the share of samples
    in which each throttle reason was active."""
    per_gpu: dict[str, list[Section]] = {}
    for s in samples:
        if t0 <= s["t"] <= t1:
            per_gpu.setdefault(f"gpu{s['gpu']}", []).append(s)
    out = {}
    for gpu, got in sorted(per_gpu.items()):
        row: dict[str, Any] = {"samples": len(got)}
        for key in READINGS:
            values = [s[key] for s in got if s.get(key) is not None]
            if values:
                row[key] = {"median": round(statistics.median(values), 1),
                            "min": min(values), "max": max(values)}
        active = sorted({r for s in got for r in s["reasons"]})
        row["reasons"] = {r: round(sum(r in s["reasons"] for s in got) / len(got), 3)
                          for r in active}
        out[gpu] = row
    return out


class Sampler(ChildSampler):
    """`with Sampler(ids) as s: ...` samples the GPUs while the block runs; `s.during(t0, t1)`
    summarises it."""

    def __init__(self, ids: list[int], interval: float = INTERVAL_S):
        self.ids, self.interval, self.samples = sorted(set(ids)), interval, []

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "knee.measure.host.gpu", ",".join(map(str, self.ids)),
                str(self.interval)]

    def parse(self, text: str) -> list[Section]:
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    def during(self, t0: float, t1: float) -> Section:
        return summary(self.samples, t0, t1)


def main(argv: list[str]) -> int:
    import signal

    lib = nvml()
    handles = {i: lib.nvmlDeviceGetHandleByIndex(i) for i in
               (int(x) for x in argv[0].split(",") if x)}
    interval = float(argv[1]) if len(argv) > 1 else INTERVAL_S
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        now = time.monotonic()
        for reading in sample(lib, handles):
            print(json.dumps({"t": round(now, 3), **reading}), flush=True)
        time.sleep(max(0.0, interval - (time.monotonic() - now)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
