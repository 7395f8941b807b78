"""The process runtime: the engine as a subprocess in its own process group."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knee.core.records import Section
from knee.measure import receipts
from knee.measure.host import gpu
from knee.measure.runtime import endpoint
from knee.measure.runtime.endpoint import Served, stopped
from knee.plan import secrets
from knee.plan.arms import server_argv

PR_SET_PDEATHSIG = 1


def _child_setup(cpus: list[int] | None) -> Callable[[], None]:
    def setup() -> None:
        """In the child: SIGTERM us if the session process dies (even by SIGKILL); pin CPUs."""
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except OSError:
            pass
        if cpus:
            os.sched_setaffinity(0, cpus)
    return setup


def split_cpus(engine_cpus: list[int] | None) -> tuple[list[int] | None, list[int] | None]:
    """(engine CPUs, client CPUs): the client gets what the engine does not, if anything."""
    if not engine_cpus:
        return None, None
    available = sorted(os.sched_getaffinity(0))
    missing = [c for c in engine_cpus if c not in available]
    if missing:
        from knee.core.errors import KneeError
        raise KneeError(f"runtime.engine_cpus: CPU {missing} not available here "
                        f"(this process may use {available})")
    rest = [c for c in available if c not in engine_cpus]
    return list(engine_cpus), rest or None


@dataclass
class Engine(Served):
    argv: list[str]
    env: dict[str, str]
    log: Path
    host: str
    port: int
    pidfile: Path | None = None
    cpus: list[int] | None = None
    proc: subprocess.Popen[bytes] | None = None
    inherit: bool = True  # False: env is the whole environment (knee's own is not passed on)

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env} if self.inherit else dict(self.env),
                start_new_session=True,
                preexec_fn=_child_setup(self.cpus),
            )
        if self.pidfile:
            # the process's start time beside its id: a cleanup stops that process, never
            # another that was given the id after it ended
            self.pidfile.parent.mkdir(parents=True, exist_ok=True)
            self.pidfile.write_text(
                f"{self.proc.pid} {start_time(self.proc.pid)}\n", encoding="utf-8")

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def stop(self, timeout_s: float = 30.0) -> Section:
        """SIGTERM the process group, then SIGKILL after timeout_s. Idempotent."""
        if self.proc is None:
            return stopped(None, False, False, None)
        t0 = time.monotonic()
        already = self.proc.poll()
        killed = False
        if already is None:
            kill_group(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                killed = True
        kill_group(self.proc.pid, signal.SIGKILL)  # stragglers in the group
        self.proc.wait()
        if self.pidfile:
            self.pidfile.unlink(missing_ok=True)
        return stopped(already if already is not None else self.proc.returncode,
                       already is not None, killed, t0)


def kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def start_time(pid: int) -> int | None:
    """A process's start time (clock ticks after boot, /proc/PID/stat field 22), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def group_leader(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def reap_pidfiles(run_dir: Path) -> list[int]:
    """Kill engine process groups left behind by a session that could not clean up: only the
    process knee started, known by its id and start time together (a pid file without the
    time, or whose process started at another time, names a process knee did not start)."""
    killed = []
    for pidfile in sorted(Path(run_dir).glob("*.pid")):
        try:
            pgid, started = (int(w) for w in pidfile.read_text(errors="replace").split())
        except (ValueError, OSError):
            pidfile.unlink(missing_ok=True)
            continue
        if started == start_time(pgid) and group_leader(pgid):
            kill_group(pgid, signal.SIGTERM)
            time.sleep(2)
            kill_group(pgid, signal.SIGKILL)
            killed.append(pgid)
        pidfile.unlink(missing_ok=True)
    return killed


# what the engine process takes from knee's environment (locale, user, paths; nothing that
# configures vLLM, torch or a hub): recorded in the boot receipt as env_inherited
INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")


def launch(s: Any, model: Section, engine_facts: Section, python: str,
           engine_cpus: list[int] | None) -> tuple[Engine, Section]:
    """A session's engine (s: knee.measure.session.Session) as knee's child process, in its own
    environment (never knee's)."""
    port = s.runtime.get("port") or endpoint.free_port(s.runtime["host"])
    env = {**(s.runtime.get("engine") or {}).get("env", {}), **s.arm.get("env", {}),
           "VLLM_CACHE_ROOT": str(s.cache_root)}
    if gpus := gpu.ids(s.runtime):
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
    # knee's own environment is not the engine's: an exported HF_TOKEN or VLLM_* would change
    # it unrecorded; it gets the names in INHERITED, the config's env and its secret_env
    inherited = {k: os.environ[k] for k in INHERITED if k in os.environ}
    secret = {k: os.environ[k] for k in s.arm.get("secret_env", []) if k in os.environ}
    argv = server_argv(python, s.arm, model["path"], model["name"], s.runtime["host"], port)
    engine = Engine(argv=argv, env={**inherited, **secret, **env}, log=s.log,
                    host=s.runtime["host"], port=port, pidfile=s.root / ".run" / f"{s.sid}.pid",
                    cpus=engine_cpus, inherit=False)
    return engine, {"argv": secrets.redact_argv(argv), "env": secrets.redact_env(
        {**env, "VLLM_CACHE_ROOT": receipts.shown(s.cache_root)}, s.arm.get("secret_env", [])),
        "env_inherited": secrets.redact_env(shown_paths(inherited))}


def shown_paths(env: Section) -> Section:
    """Inherited path variables as a receipt shows paths (knee.measure.receipts.shown: inside
    the working directory, relative to it), so a receipt does not spell the machine's tree."""
    return {k: os.pathsep.join(receipts.shown(x) for x in v.split(os.pathsep))
            if k in ("PATH", "HOME", "TMPDIR") else v for k, v in env.items()}
