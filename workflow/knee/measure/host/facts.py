"""Host facts that explain noise, read from /proc around each instrument window.

Per CPU: the share of the window it spent busy, stolen by the hypervisor (steal) and waiting
on I/O; the load average before and after; the clock frequency where the kernel exposes it;
the CPU pressure (the share of the window in which some runnable task waited for a CPU); and
how busy the load generator's CPUs were with work that was not the load generator's own (a
test suite or a build beside a measurement shows up there). How fast each CPU ran during the
window is sampled by knee.measure.host.speed. Where /proc is not readable (not Linux) the window
records that it could not tell.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

from knee.core.records import Section

PROC = Path("/proc")
SYS_CPU = Path("/sys/devices/system/cpu")
# /proc/stat columns after the cpu name
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_times(proc: Path = PROC) -> dict[str, list[int]]:
    """Jiffies per CPU (and the total, 'cpu') in the order of FIELDS."""
    out = {}
    for line in (proc / "stat").read_text(encoding="utf-8").splitlines():
        name, *values = line.split()
        if name.startswith("cpu"):
            out[name] = [int(v) for v in values[:len(FIELDS)]]
    return out


def frequencies_mhz(sys_cpu: Path = SYS_CPU) -> dict[str, float]:
    out = {}
    for f in sorted(sys_cpu.glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            out[f.parts[-3]] = int(f.read_text(encoding="utf-8")) / 1000.0
        except (OSError, ValueError):
            continue
    return out


def pressure_us(proc: Path = PROC) -> int | None:
    """Total microseconds some runnable task waited for a CPU (PSI), if the kernel tells."""
    try:
        for line in (proc / "pressure" / "cpu").read_text(encoding="utf-8").splitlines():
            if line.startswith("some"):
                return int(line.rsplit("total=", 1)[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def group_cpu(pgid: int | None, proc: Path = PROC) -> dict[str, Section]:
    """CPU seconds and thread count of every process in one process group (the engine's)."""
    if pgid is None:
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text(encoding="utf-8")
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:]
        f = rest.split()
        if int(f[2]) == pgid:
            out[stat.parent.name] = {"name": comm, "cpu_s": (int(f[11]) + int(f[12])) / tick,
                                     "threads": int(f[17])}
    return out


def group_window(before: Section, after: Section, wall_s: float) -> list[Section]:
    """Per engine process alive at the end of the window: its share of one CPU over it."""
    out = []
    for pid, end in sorted(after.items(), key=lambda kv: int(kv[0])):
        used = end["cpu_s"] - before.get(pid, {}).get("cpu_s", 0.0)
        out.append({"pid": int(pid), "name": end["name"], "threads": end["threads"],
                    "cpu_share": round(used / wall_s, 4) if wall_s > 0 else None})
    return out


def snapshot(proc: Path = PROC, sys_cpu: Path = SYS_CPU) -> Section | None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    try:
        load = (proc / "loadavg").read_text(encoding="utf-8").split()
        return {"cpu": cpu_times(proc), "load1": float(load[0]), "mhz": frequencies_mhz(sys_cpu),
                "pressure_us": pressure_us(proc), "t": time.monotonic(),
                "self_cpu_s": usage.ru_utime + usage.ru_stime}
    except (OSError, ValueError, IndexError):
        return None


def foreign_busy(cpus: Section, names: list[str], own_cpu_s: float, wall_s: float) -> float | None:
    """The share of the load generator's CPUs busy with anything but the load generator."""
    shares = [cpus[n]["busy"] for n in names if n in cpus]
    if not shares or wall_s <= 0:
        return None
    other: float = round(max(0.0, sum(shares) / len(shares)
                             - own_cpu_s / (wall_s * len(shares))), 4)
    return other


def window(before: Section | None, after: Section | None,
           client_cpus: list[int] | None = None) -> Section:
    """What the host did between two snapshots: per CPU busy, steal and iowait shares, CPU
    pressure, and the load generator's own CPU time against its CPUs' busy share."""
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
    wall = after["t"] - before["t"]
    own = after["self_cpu_s"] - before["self_cpu_s"]
    pressure = None
    if before["pressure_us"] is not None and after["pressure_us"] is not None and wall > 0:
        pressure = round((after["pressure_us"] - before["pressure_us"]) / (wall * 1e6), 4)
    names = [f"cpu{c}" for c in client_cpus or []]
    return {"readable": True, "cpus": cpus, "load1_before": before["load1"],
            "load1_after": after["load1"], "mhz_after": after["mhz"], "wall_s": round(wall, 3),
            "cpu_pressure": pressure, "client_cpu_s": round(own, 3),
            "client_cpus_foreign_busy": foreign_busy(cpus, names, own, wall)}
