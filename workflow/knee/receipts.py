"""Facts for receipts: hardware, compile-cache state, engine versions (no secrets)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path


def hardware() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    facts = {"machine": platform.machine(), "kernel": platform.release(), "cpu_model": cpu,
             "cpus": os.cpu_count(), "memory_gib": round(mem_kb / 2**20, 1), "gpus": []}
    if shutil.which("nvidia-smi"):
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        facts["gpus"] = [line.strip() for line in r.stdout.splitlines() if line.strip()]
    return facts


def shown(path: Path | str) -> str:
    """A path as a receipt shows it: relative to the working directory when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def compile_cache(cache_root: Path) -> dict:
    """What the engine's torch.compile cache holds: its directory and the cache keys in it."""
    base = Path(cache_root) / "torch_compile_cache"
    keys = sorted(str(p.relative_to(base)) for p in base.glob("torch_aot_compile/*")
                  if p.is_dir()) if base.is_dir() else []
    keys += sorted(p.name for p in base.glob("*") if p.is_dir() and p.name != "torch_aot_compile"
                   ) if base.is_dir() else []
    return {"dir": shown(base), "existed": base.is_dir(), "keys": keys}
