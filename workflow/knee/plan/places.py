"""The paths and CPUs a config names, checked against this machine before anything runs."""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from pathlib import Path

from knee.core import datasets, jsonio, layout, prompts
from knee.core.errors import KneeError
from knee.core.records import Config, Section
from knee.instruments import dataset_selections
from knee.plan import runtimes
from knee.plan.arms import resolve_arms

# directories a config must never hand to the engine (read, or mount read-write)
SYSTEM = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/root", "/run",
          "/sbin", "/srv", "/sys", "/usr", "/var/lib", "/var/run")


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_dir(value: str, key: str, source: str) -> Path:
    """A directory setting: never the root, a top-level or system directory, the working
    directory, the home directory or one that contains them."""
    path = (Path.cwd() / value).resolve()
    reason = None
    if len(path.parts) <= 2:
        reason = "the root or a top-level directory"
    elif any(inside(path, Path(s)) for s in SYSTEM):
        reason = "a system directory"
    elif inside(Path.cwd().resolve(), path):
        reason = "the working directory or one that contains it"
    elif inside(Path.home().resolve(), path):
        reason = "the home directory or one that contains it"
    if reason:
        raise KneeError(f"{source}: {key}: {value!r} resolves to {path}, {reason}: point it at "
                        "a directory of its own")
    return path


CACHE_HOME = Path("resources")  # knee's own folders, in the working directory
NOT_FOR_CACHES = ("/var", "/opt", "/home", "/snap", "/nix", "/mnt/wsl")
CACHE_PLACES = ("/var/cache", "/var/tmp")  # where the file system hierarchy puts caches


def check_cache_dir(value: str, source: str) -> Path:
    """runtime.cache_dir: under knee's resources/ (not its models or engine), or an absolute
    path outside system, home, repository and results trees."""
    path = check_dir(value, "runtime.cache_dir", source)
    cwd, own = Path.cwd().resolve(), (Path.cwd() / CACHE_HOME).resolve()
    reason = None
    if inside(path, cwd):
        if path == own or not inside(path, own) or any(
                inside(path, own / p) for p in ("models", "engine-venv")):
            reason = ("inside the repository but not a folder of its own under resources/ "
                      "(e.g. resources/vllm-cache)")
    elif (any(inside(path, Path(s)) for s in NOT_FOR_CACHES) or inside(path, Path.home())) \
            and not any(inside(path, Path(s)) for s in CACHE_PLACES):
        reason = "inside a system or home directory"
    elif any((p / layout.PLAN).is_file() for p in (path, *path.parents)):
        reason = "inside a results folder"
    if reason:
        raise KneeError(f"{source}: runtime.cache_dir: {value!r} resolves to {path}, {reason}: "
                        "every engine writes it (a container mounts it read-write); use "
                        "resources/<name> or an absolute path of its own, e.g. /tmp/vllm-cache")
    return path


def check_model_dir(value: str, key: str, source: str) -> None:
    """A model given by path is a directory holding the model's config.json."""
    path = check_dir(value, key, source)
    if not (path / "config.json").is_file():
        what = "does not exist" if not path.exists() else "holds no config.json"
        raise KneeError(f"{source}: {key}: {value!r} {what}: a model is a directory with its "
                        "config.json, weights and tokenizer")


def check_datasets(instruments: Section, source: str) -> None:
    """Every dataset selection of the instruments (each instrument's Spec names its own)."""
    for key, selection, needed in dataset_selections(instruments):
        datasets.check_selection(selection, needed, key, source)


def check_prompts(fixture: Section, source: str, max_model_len: int | None = None) -> None:
    """The prompt files of every class that selects from no dataset."""
    own = [c for c in fixture["classes"] if c not in (fixture.get("datasets") or {})]
    if not own:
        return
    folder = check_dir(fixture["prompt_dir"], "instruments.fixture.prompt_dir", source)
    if not folder.is_dir():
        raise KneeError(f"{source}: instruments.fixture.prompt_dir: {fixture['prompt_dir']!r} "
                        "is not a directory")
    for i, name in enumerate(fixture["classes"]):
        if name not in own:
            continue
        if not any(p.is_file() for p in (folder / name).glob("*.txt")):
            have = sorted(p.name for p in folder.iterdir() if p.is_dir())
            raise KneeError(f"{source}: instruments.fixture.classes[{i}]: {name!r} has no "
                            f"prompts ({fixture['prompt_dir']}/{name}/*.txt); classes there: "
                            f"{have}")
        try:
            for path in prompts.class_files(folder, name):
                prompts.read_prompt(path, max_model_len)
        except KneeError as e:
            raise KneeError(f"{source}: {e}") from None


def check_results_folder(root: Path | str, source: str) -> None:
    """results/ and results/NAME are where they are: a link that leads out of the working
    directory would have every output written elsewhere."""
    here = Path.cwd().resolve()
    for path in (Path(root).parent, Path(root)):
        if path.is_symlink() and not inside(path.resolve(), here):
            raise KneeError(f"{source}: {path} is a symbolic link to {path.resolve()}, outside "
                            f"{here}: knee writes a results folder where it is, never through "
                            "a link; remove the link or choose another name")


def check_host(host: str, source: str) -> None:
    """runtime.host: an IP address written out in full, as the listening check compares it (a
    name or a shorthand such as `localhost`, "0" or 127.1 would bind where it does not look)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise KneeError(f"{source}: runtime.host: {host!r} is not an IP address: write the "
                        "address itself (127.0.0.1, ::1, 0.0.0.0), not a name") from None
    if str(ip) != host:
        raise KneeError(f"{source}: runtime.host: {host!r} is a shorthand: write {ip}")


def check_here(config: Config, source: str) -> None:
    """`knee validate-config --here`: whether this machine can boot the config's sessions (a
    Slurm job's session checks on its node). Nothing else asks it of the machine that plans or
    re-renders: each session checks again before it boots (knee.measure.preboot)."""
    if "session_resources" not in config["runtime"]:
        check_machine(config["runtime"], source)


def check_machine(rt: Section, source: str) -> None:
    """What a runtime section needs of the machine that boots it: its engine CPUs (both arms'
    sets at once in simultaneous order) and its engine Python."""
    check_cpus(rt.get("engine_cpus"), source)
    check_arm_cpus(rt.get("arm_cpus"), source)
    python = rt.get("engine", {}).get("python")
    if python:
        path = Path(python)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise KneeError(f"{source}: runtime.engine.python: {python!r} is not an executable "
                            "file on this machine, which would boot the engine with it")


def check_cpus(cpus: list[int] | None, source: str, key: str = "runtime.engine_cpus") -> None:
    usable = sorted(os.sched_getaffinity(0))
    for i, cpu in enumerate(cpus or []):
        if cpu not in usable:
            raise KneeError(f"{source}: {key}[{i}]: CPU {cpu} is not one this machine lets "
                            f"knee use ({usable})")


def check_arm_cpus(sets: list[list[int]] | None, source: str) -> None:
    """Simultaneous order's two CPU sets fit this machine: both at once."""
    if not sets:
        return
    usable = sorted(os.sched_getaffinity(0))
    need = len(sets[0]) + len(sets[1])
    if need > len(usable):
        raise KneeError(f"{source}: runtime.arm_cpus: the two arms run at once, {len(sets[0])} + "
                        f"{len(sets[1])} = {need} CPUs, but this machine lets knee use "
                        f"{len(usable)} ({usable})")
    for i, cpus in enumerate(sets):
        check_cpus(cpus, source, f"runtime.arm_cpus[{i}]")


# sbatch options that would change what the session job runs, where, as whom or with which
# environment: the job is knee's session, in the repository, with knee's environment
SBATCH_REFUSED = ("wrap", "chdir", "export", "export-file", "get-user-env", "uid", "gid",
                  "output", "error", "input", "open-mode", "container", "container-id",
                  "parsable", "test-only", "wait", "dependency", "array", "hold")


def check_slurm(config: Config, source: str) -> None:
    """runtime.session_resources.slurm_extra: sbatch options that leave the job knee's own
    (the schema already holds it to words --name[=value])."""
    extra = config["runtime"].get("session_resources", {}).get("slurm_extra", "")
    for word in extra.split():
        name = word[2:].split("=", 1)[0]
        if any(o.startswith(name) for o in SBATCH_REFUSED):
            raise KneeError(f"{source}: runtime.session_resources.slurm_extra: {word!r}: sbatch "
                            f"option --{name} (or what it abbreviates) would change what the "
                            f"session job runs, where or with which environment")


REQUIREMENTS_LIMIT = 64 * 1024
# name==version, an environment marker (no dash in it: pip reads `-i URL` or `--index-url=...`
# behind a marker as its own option), sha256 hashes
PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?==[A-Za-z0-9.+!_-]+"
                    r"(\s*;[A-Za-z0-9_.'\"<>=!~ ()]*?)?(\s+--hash=sha256:[0-9a-f]{64})*$")


def requirements_path(value: str, source: str) -> Path:
    """A requirements file of the repository: a regular file inside the working directory
    (links resolved); read with jsonio's bounded reads, at most REQUIREMENTS_LIMIT bytes."""
    key, path = "runtime.engine.requirements", (Path.cwd() / value).resolve()
    if not inside(path, Path.cwd().resolve()):
        raise KneeError(f"{source}: {key}: {value!r} resolves to {path}, outside the working "
                        "directory: the file is part of the experiment, so it lives in the "
                        "repository (e.g. envs/gpu-engine.txt)")
    if not path.is_file():
        raise KneeError(f"{source}: {key}: {value!r} is not a regular file")
    return path


def check_requirements(value: str, source: str) -> None:
    """Every line of an engine's requirements file names one package at one exact version: no
    ranges, URLs, options or nested files, so the file says what the environment holds."""
    where = f"{source}: runtime.engine.requirements: {value!r}"
    text = jsonio.read_text(requirements_path(value, source), REQUIREMENTS_LIMIT)
    pins = 0
    for i, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if line.startswith("-"):
            raise KneeError(f"{where}: line {i}: {line!r} is not a pinned requirement (an "
                            "option or a nested file; name every package with its version)")
        if not PINNED.match(line):
            raise KneeError(f"{where}: line {i}: {line!r} pins no exact version "
                            "(write name==version)")
        pins += 1
    if not pins:
        raise KneeError(f"{where}: pins nothing: name every package as name==version")


def engine_home(engine: Section) -> str:
    """Where knee builds the environment of a requirements file: named by the file's sha256."""
    data = jsonio.read_bytes(requirements_path(engine["requirements"], "config"),
                             REQUIREMENTS_LIMIT)
    return f"resources/engine-{hashlib.sha256(data).hexdigest()[:12]}"


def engine_python(engine: Section) -> str:
    """The Python of runtime.engine: the one named, or the one built from its requirements."""
    return engine["python"] if "python" in engine else f"{engine_home(engine)}/bin/python"


def check(config: Config, source: str) -> None:
    """Every path of a validated config that any machine can check. The engine CPUs and Python
    are the booting machine's (check_machine, before each session; check_here on request); a
    session run elsewhere (a Slurm job) checks its model again on its node before it boots."""
    rt = config["runtime"]
    runtime = runtimes.of(config)
    if runtime.image and "image" not in rt:
        raise KneeError(f"{source}: runtime.image: the {runtime.kind} runtime needs an image "
                        "({ref, digest}) to boot")
    check_host(rt["host"], source)
    check_cache_dir(rt["cache_dir"], source)
    check_slurm(config, source)
    if "requirements" in rt.get("engine", {}):
        check_requirements(rt["engine"]["requirements"], source)
    fixture = config["instruments"].get("fixture")
    if fixture:
        lens = [n for arm in resolve_arms(config).values()
                if isinstance(n := arm["args"].get("max-model-len"), int)]
        check_prompts(fixture, source, min(lens, default=None))
    check_datasets(config["instruments"], source)
    path = config["model"].get("path")
    if path is not None:
        if runtime.model_check == "model":
            check_model_dir(path, "model.path", source)
        elif runtime.model_check == "dir":  # mounted into the container
            check_dir(path, "model.path", source)
