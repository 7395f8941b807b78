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


SLURM_FACTS = {  # receipt field: the variable Slurm sets in a job
    "job_id": "SLURM_JOB_ID", "node": "SLURMD_NODENAME", "nodelist": "SLURM_JOB_NODELIST",
    "num_nodes": "SLURM_JOB_NUM_NODES", "partition": "SLURM_JOB_PARTITION",
    "account": "SLURM_JOB_ACCOUNT", "cpus_on_node": "SLURM_CPUS_ON_NODE",
    "cpus_per_task": "SLURM_CPUS_PER_TASK", "gpus_on_node": "SLURM_GPUS_ON_NODE",
    "job_gpus": "SLURM_JOB_GPUS",
}
# fields of `scontrol show job -o` that describe the allocation
ALLOCATION = ("TRES", "NumCPUs", "MinMemoryNode", "MinMemoryCPU", "TimeLimit", "Partition",
              "Account", "QOS", "NodeList", "TresPerNode", "TresPerJob", "Features")


def slurm_allocation(job_id: str) -> dict:
    """The job's allocation as the controller reports it (the step's env does not carry all)."""
    try:
        r = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True,
                           text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"scontrol: {e}"}
    if r.returncode != 0:
        return {"error": f"scontrol: {r.stderr.strip()[:200]}"}
    fields = dict(tok.split("=", 1) for tok in r.stdout.split() if "=" in tok)
    return {k: fields[k] for k in ALLOCATION if fields.get(k) not in (None, "(null)")}


def scheduler(env: dict | None = None) -> dict:
    """Where the session runs: the Slurm job, node and allocation, or the local machine.
    Taken before the session pins itself to the client's CPUs."""
    env = os.environ if env is None else env
    facts = {"host": platform.node(), "cpu_affinity": sorted(os.sched_getaffinity(0))}
    if not env.get("SLURM_JOB_ID"):
        return {"kind": "local", **facts}
    slurm = {k: env[v] for k, v in SLURM_FACTS.items() if env.get(v)}
    return {"kind": "slurm", **facts, **slurm,
            "allocation": slurm_allocation(env["SLURM_JOB_ID"])}


def compile_cache(cache_root: Path) -> dict:
    """What the engine's torch.compile cache holds: its directory and the cache keys in it."""
    base = Path(cache_root) / "torch_compile_cache"
    keys = sorted(str(p.relative_to(base)) for p in base.glob("torch_aot_compile/*")
                  if p.is_dir()) if base.is_dir() else []
    keys += sorted(p.name for p in base.glob("*") if p.is_dir() and p.name != "torch_aot_compile"
                   ) if base.is_dir() else []
    return {"dir": shown(base), "existed": base.is_dir(), "keys": keys}
