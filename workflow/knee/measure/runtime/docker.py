"""The docker runtime: the engine image pinned by digest, one labelled container per session.

Through the Docker SDK. The pinned digest is checked against what the reference resolves to
before anything is pulled or booted; registry credentials come from environment variables
named in the config and are never written anywhere. The container gets an argv list, the
model read-only, the compile cache read-write (kept across boots), its port on 127.0.0.1
only, labels naming the experiment and session, and is removed on every way out.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knee.core.errors import KneeError
from knee.core.records import Plan, Section
from knee.measure import receipts
from knee.measure.runtime.endpoint import Served, free_port, stopped
from knee.plan import secrets
from knee.plan.arms import server_argv

LABEL_EXPERIMENT = "knee.experiment"
LABEL_SESSION = "knee.measure.session"
MODEL_MOUNT = "/model"
CACHE_MOUNT = "/cache"
CONTAINER_PORT = 8000


def docker_client() -> Any:
    try:
        import docker
        return docker.from_env(timeout=600)
    except Exception as e:  # the SDK raises DockerException subclasses, or ImportError
        raise KneeError(f"runtime.kind is 'docker' but no Docker engine answers: {e}") from None


def repository(ref: str) -> str:
    """registry/name without its tag or digest."""
    name = ref.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def credentials(image: Section) -> Section | None:
    """{username, password} from the environment variables the config names, or None."""
    names = {k: image.get(f"{k}_env") for k in ("username", "password")}
    if not any(names.values()):
        return None
    missing = [f"runtime.image.{k}_env: ${v} is not set" for k, v in names.items()
               if v and not os.environ.get(v)]
    if missing:
        raise KneeError("; ".join(missing))
    return {k: os.environ[v] for k, v in names.items() if v}


def resolve(client: Any, image: Section) -> str:
    """The digest the reference resolves to in its registry, without pulling."""
    import docker

    try:
        digest: str = client.images.get_registry_data(image["ref"],
                                                      auth_config=credentials(image)).id
        return digest
    except docker.errors.APIError as e:
        raise KneeError(f"runtime.image.ref: cannot resolve {image['ref']!r}: "
                        f"{e.explanation or e}") from None


def pull(image: Section, client: Any = None) -> Section:
    """Check the pinned digest, pull by digest, and return the facts for receipts/image.json."""
    import docker

    client = client or docker_client()
    ref, pinned = image["ref"], image["digest"]
    t0 = time.monotonic()
    resolved = resolve(client, image)
    if resolved != pinned:
        raise KneeError(f"runtime.image.digest: {ref!r} resolves to {resolved}, not the pinned "
                        f"{pinned}; nothing was pulled or booted (pin the new digest only if "
                        "the image change is intended)")
    pinned_ref = f"{repository(ref)}@{pinned}"
    try:
        img = client.images.pull(pinned_ref, auth_config=credentials(image))
    except docker.errors.APIError as e:
        raise KneeError(f"runtime.image: pulling {pinned_ref} failed: {e.explanation or e}"
                        ) from None
    if pinned_ref not in img.attrs.get("RepoDigests", []):
        raise KneeError(f"runtime.image.digest: the pulled image lists "
                        f"{img.attrs.get('RepoDigests')}, not {pinned_ref}")
    return {"ref": ref, "digest": pinned, "resolved_digest": resolved, "pinned_ref": pinned_ref,
            "image_id": img.id, "size_bytes": img.attrs.get("Size"),
            "pull_seconds": round(time.monotonic() - t0, 3),
            "credentials": "from the environment" if credentials(image) else "none"}


def gpu_requests(gpus: str | int | list[int] | None) -> list[Any]:
    """`all`, a count, or a list of device ids -> Docker device requests (none if unset)."""
    if gpus in (None, "", [], 0):
        return []
    from docker.types import DeviceRequest

    if gpus == "all":
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    if isinstance(gpus, int):
        return [DeviceRequest(count=gpus, capabilities=[["gpu"]])]
    return [DeviceRequest(device_ids=[str(g) for g in gpus], capabilities=[["gpu"]])]


def run_python(image: str, code: str) -> str:
    """stdout of `python -c code` in a throw-away container of the image (no network)."""
    out = docker_client().containers.run(image, entrypoint=["python", "-c", code], remove=True,
                                         network_disabled=True, stderr=False)
    text: str = out.decode()
    return text


@dataclass
class Container(Served):
    """A session's engine container; the same interface as the process runtime's Engine."""

    NOUN = "engine container"
    image: str  # repository@sha256:...
    command: list[str]  # server flags after the image's entrypoint
    env: dict[str, str]
    log: Path
    host: str
    port: int
    model_dir: str
    cache_dir: str
    labels: dict[str, str]
    gpus: str | int | list[int] | None = None
    shm_size: str | None = None
    cpus: list[int] | None = None
    name: str | None = None
    container: Any = None
    _follower: threading.Thread | None = field(default=None, repr=False)

    def run_spec(self) -> Section:
        """What the container is started with (for the receipt and the SDK call)."""
        spec = {
            "image": self.image, "command": self.command, "environment": self.env,
            "labels": self.labels, "name": self.name, "detach": True,
            "ports": {f"{CONTAINER_PORT}/tcp": (self.host, self.port)},
            "volumes": {self.model_dir: {"bind": MODEL_MOUNT, "mode": "ro"},
                        self.cache_dir: {"bind": CACHE_MOUNT, "mode": "rw"}},
        }
        if self.shm_size:
            spec["shm_size"] = self.shm_size
        else:
            spec["ipc_mode"] = "host"
        if self.cpus:
            spec["cpuset_cpus"] = ",".join(map(str, self.cpus))
        requests = gpu_requests(self.gpus)
        if requests:
            spec["device_requests"] = requests
        return spec

    def start(self) -> None:
        import docker

        self.log.parent.mkdir(parents=True, exist_ok=True)
        client = docker_client()
        self._remove_leftovers(client)  # a killed earlier attempt of this very session
        try:
            self.container = client.containers.run(**self.run_spec())
        except docker.errors.APIError as e:
            raise KneeError(f"cannot start the engine container from {self.image}: "
                            f"{e.explanation or e}") from None
        self._follower = threading.Thread(target=self._follow, daemon=True)
        self._follower.start()

    def _remove_leftovers(self, client: Any) -> None:
        labels = [f"{k}={v}" for k, v in self.labels.items()]
        for c in client.containers.list(all=True, filters={"label": labels}):
            c.remove(force=True)

    def _follow(self) -> None:
        """Copy the container's log to the session's engine log as it is written."""
        try:
            with open(self.log, "ab") as out:
                for chunk in self.container.logs(stream=True, follow=True):
                    out.write(chunk)
                    out.flush()
        except Exception:  # the container went away: the log has what there was
            pass

    def exited(self) -> int | None:
        if self.container is None:
            return None
        try:
            self.container.reload()
        except Exception:
            return -1  # removed under us
        if self.container.status in ("exited", "dead"):
            code: int = self.container.attrs["State"]["ExitCode"]
            return code
        return None

    def stop(self, timeout_s: float = 30.0) -> Section:
        """Stop (SIGTERM, then SIGKILL after timeout_s) and remove the container. Idempotent."""
        if self.container is None:  # interrupted while starting: find it by its labels
            self._remove_leftovers(docker_client())
            return stopped(None, False, False, None)
        t0 = time.monotonic()
        already = self.exited()
        killed = False
        if already is None:
            try:
                self.container.stop(timeout=int(timeout_s))
                code = self.container.wait(timeout=timeout_s + 30)["StatusCode"]
                killed = code in (137, -9)
            except Exception:
                code = None
        else:
            code = already
        if self._follower is not None:
            self._follower.join(timeout=5)
        try:
            self.container.remove(force=True)
        except Exception:
            pass
        self.container = None
        return stopped(code, already is not None, killed, t0)


def remove_labelled(experiment: str) -> list[str]:
    """Remove every container labelled with this experiment (the workflow's onerror)."""
    try:
        client = docker_client()
    except KneeError:
        return []
    gone = []
    label = f"{LABEL_EXPERIMENT}={experiment}"
    for c in client.containers.list(all=True, filters={"label": label}):
        c.remove(force=True)
        gone.append(c.name)
    return gone


def launch(s: Any, model: Section, engine_facts: Section, python: str,
           engine_cpus: list[int] | None) -> tuple[Container, Section]:
    """A session's engine (s: knee.measure.session.Session) in a container of the pinned image;
    engine_facts is the image receipt."""
    port = s.runtime.get("port") or free_port(s.runtime["host"])
    return container_engine(s.as_run, s.sid, s.arm, model, engine_facts, s.log, port,
                            s.cache_root, engine_cpus)


def container_engine(plan: Plan, sid: str, arm: Section, model: Section, image: Section, log: Path,
                     port: int, cache_root: Path,
                     cpus: list[int] | None) -> tuple[Container, Section]:
    """The docker runtime's engine: the pinned image (checked and pulled again on this node),
    the server listening on all of the container's interfaces, published on runtime.host."""
    rt = plan["runtime"]
    pull(rt["image"])
    cache_root.mkdir(parents=True, exist_ok=True)
    python, *command = server_argv("python", arm, MODEL_MOUNT, model["name"], "0.0.0.0",
                                   CONTAINER_PORT)
    env = {**arm.get("env", {}), "VLLM_CACHE_ROOT": CACHE_MOUNT}
    secret_env = arm.get("secret_env", [])
    engine = Container(
        image=image["pinned_ref"], command=command[2:],
        env={**env, **{k: os.environ[k] for k in secret_env}}, log=log, host=rt["host"],
        port=port, model_dir=str(Path(model["path"]).resolve()), cache_dir=str(cache_root),
        labels={LABEL_EXPERIMENT: plan["name"], LABEL_SESSION: sid},
        gpus=rt.get("gpus"), shm_size=rt.get("shm_size"), cpus=cpus,
        name=f"knee-{plan['name']}-{sid}")
    spec = engine.run_spec()
    shown = {**spec, "command": secrets.redact_argv(spec["command"]),
             "environment": secrets.redact_env(env, secret_env), "device_requests": repr(
        spec.get("device_requests", [])), "volumes": {
            receipts.shown(k): v for k, v in spec["volumes"].items()}}
    return engine, {"argv": secrets.redact_argv([python, *command]),
                    "env": secrets.redact_env(env, secret_env), "container": shown,
                    "image_digest": image["digest"]}
