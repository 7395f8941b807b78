"""Host facts that explain noise, read from /proc around each instrument window.

Per CPU: the share of the window it spent busy, stolen by the hypervisor (steal) and waiting
on I/O; the load average before and after; the clock frequency where the kernel exposes it.
Where /proc is not readable (not Linux) the window records that it could not tell.
"""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")
SYS_CPU = Path("/sys/devices/system/cpu")
# /proc/stat columns after the cpu name
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_times(proc: Path = PROC) -> dict[str, list[int]]:
    """Jiffies per CPU (and the total, 'cpu') in the order of FIELDS."""
    out = {}
    for line in (proc / "stat").read_text().splitlines():
        name, *values = line.split()
        if name.startswith("cpu"):
            out[name] = [int(v) for v in values[:len(FIELDS)]]
    return out


def frequencies_mhz(sys_cpu: Path = SYS_CPU) -> dict[str, float]:
    out = {}
    for f in sorted(sys_cpu.glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            out[f.parts[-3]] = int(f.read_text()) / 1000.0
        except (OSError, ValueError):
            continue
    return out


def snapshot(proc: Path = PROC, sys_cpu: Path = SYS_CPU) -> dict | None:
    try:
        load = (proc / "loadavg").read_text().split()
        return {"cpu": cpu_times(proc), "load1": float(load[0]),
                "mhz": frequencies_mhz(sys_cpu)}
    except (OSError, ValueError, IndexError):
        return None


def window(before: dict | None, after: dict | None) -> dict:
    """What the host did between two snapshots: per CPU busy, steal and iowait shares."""
    if before is None or after is None:
        return {"readable": False}
    cpus = {}
    for name, end in after["cpu"].items():
        start = before["cpu"].get(name)
        if start is None:
            continue
        d = dict(zip(FIELDS, (b - a for a, b in zip(start, end, strict=False)), strict=False))
        total = sum(d.values())
        if total <= 0:
            continue
        cpus[name] = {"busy": round(1 - (d["idle"] + d["iowait"]) / total, 4),
                      "steal": round(d["steal"] / total, 4),
                      "iowait": round(d["iowait"] / total, 4)}
    return {"readable": True, "cpus": cpus, "load1_before": before["load1"],
            "load1_after": after["load1"], "mhz_after": after["mhz"]}
