"""The two arms: resolved from the config, checked to differ in exactly the declared variable,
and turned into what the engine sees (its argv and environment)."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import urlsplit

from knee.core.errors import KneeError
from knee.core.records import Config, Plan, Section
from knee.plan import engineflags, models, runtimes, secrets

ARMS = ("control", "candidate")
NO_VARIABLE = "none"  # an A/A experiment: the two arms are identical
# flags knee sets itself, and where the config sets what they carry
OWNED_FLAGS = {
    "host": "runtime.host", "port": "runtime.port", "uds": "runtime.host",
    "model": "model.path", "served-model-name": "model.name",
    "speculative-config": "speculative_config (a mapping)",
}
OWNED_ENV = {"VLLM_CACHE_ROOT": "runtime.cache_dir"}
# variables that run other code in every process the engine starts, or change which programs
# it finds: never from a config
HIJACK_ENV = ("LD_PRELOAD", "LD_AUDIT", "PYTHONSTARTUP", "PYTHONINSPECT", "BASH_ENV", "ENV",
              "PATH")
_ABSENT = object()


def variables(variable: str | list[str]) -> list[str]:
    """The declared variable as a list of dotted settings ([] for an A/A experiment)."""
    if variable == NO_VARIABLE:
        return []
    return [variable] if isinstance(variable, str) else list(variable)


def shown_variable(variable: str | list[str]) -> str:
    return variable if isinstance(variable, str) else " + ".join(variable)


def variable_values(plan: Plan) -> dict[str, Any]:
    """Each arm's value of the declared variable (a list of values for a list of settings)."""
    out = {}
    for arm in ARMS:
        values = [at_path(plan["arms"][arm], v) for v in variables(plan["variable"])]
        out[arm] = values if isinstance(plan["variable"], list) else (values or [None])[0]
    return out


def at_path(data: Any, dotted: str) -> Any:
    """The value at a dotted setting, whole where it is a mapping (a draft model named by its
    package), None where absent."""
    for part in dotted.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = copy.deepcopy(base)
        for k, v in over.items():
            out[k] = deep_merge(base.get(k), v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


def resolve_arms(config: Config) -> dict[str, Section]:
    base = {"env": {}, "args": {}, "speculative_config": None, **config["server"]}
    return {arm: deep_merge(base, config["arms"].get(arm) or {}) for arm in ARMS}


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths to leaves; lists are leaves (a schedule is one value)."""
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: data}


def typed(value: Any) -> str:
    """A value with its type: 0, 0.0, false and "0" are four different settings."""
    return json.dumps(value, sort_keys=True)


def differences(a: Section, b: Section) -> list[tuple[str, Any, Any]]:
    """Settings whose values differ, with their types (an absent setting reads as null, as
    the engine sees it)."""
    fa, fb = flatten(a), flatten(b)
    return [(key, fa.get(key), fb.get(key)) for key in sorted(set(fa) | set(fb))
            if typed(fa.get(key)) != typed(fb.get(key))]


def in_variable(key: str, variable: str | list[str]) -> bool:
    """Whether a dotted setting is (one of) the declared variable(s)."""
    return any(key == v or key.startswith(v + ".") for v in variables(variable))


def leaf(arm: Section, path: str) -> Any:
    node: Any = arm
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def check_leaves(arms: dict[str, Section], variable: str | list[str], source: str) -> None:
    """Each declared variable names one setting, not a group of them; a group that one arm
    switches off (null or absent: speculation off against on) is one setting."""
    for v in variables(variable):
        values = {arm: leaf(arms[arm], v) for arm in ARMS}
        if any(values[arm] in (None, _ABSENT) for arm in ARMS):
            continue
        for arm in ARMS:
            value = values[arm]
            if isinstance(value, dict) and value:
                raise KneeError(
                    f"{source}: variable: {v!r} is a group of {len(value)} settings in the "
                    f"{arm} arm ({', '.join(sorted(value))}): name the one that changes, e.g. "
                    f"{v}.{sorted(value)[0]}, or list each that must: variable: [{v}.a, {v}.b]")


def check_one_variable(arms: dict[str, Section], variable: str | list[str],
                       source: str = "config") -> None:
    """Refuse arms that differ anywhere but the declared variable (values compared with their
    types), or not in each declared setting; then compare what the engine would see."""
    check_leaves(arms, variable, source)
    diffs = differences(arms["control"], arms["candidate"])
    outside = [d for d in diffs if not in_variable(d[0], variable)]
    if outside:
        rows = "\n  ".join(f"{k}: control={c!r} candidate={v!r}" for k, c, v in outside)
        what = ("variable none (an A/A experiment): the arms must be identical, they differ"
                if variable == NO_VARIABLE else
                f"arms differ outside the declared variable {shown_variable(variable)!r}")
        raise KneeError(f"{source}: {what}:\n  {rows}")
    for v in variables(variable):
        if not any(in_variable(d[0], v) for d in diffs):
            hint = ("drop it from the list" if isinstance(variable, list) else
                    "for an A/A experiment, declare variable: none")
            raise KneeError(f"{source}: arms do not differ in the declared variable {v!r} "
                            f"({hint})")
    check_engine_view(arms, variable, source)


def substituted(arm: Section, other: Section, variable: str | list[str]) -> Section:
    """arm with the declared settings taken from other."""
    out = copy.deepcopy(arm)
    for v in variables(variable):
        *parents, last = v.split(".")
        node = out
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        value = leaf(other, v)
        if value is _ABSENT:
            node.pop(last, None)
        else:
            node[last] = copy.deepcopy(value)
    return out


def engine_view(arm: Section) -> tuple[list[str], Section, list[str]]:
    """What the engine is started with, apart from where it runs."""
    return (server_argv("python", arm, "MODEL", "NAME", "HOST", 0),
            dict(sorted(arm.get("env", {}).items())), sorted(arm.get("secret_env", [])))


def check_engine_view(arms: dict[str, Section], variable: str | list[str], source: str) -> None:
    """With the declared settings put back to the control's, the candidate's engine must get
    exactly the control's argv and environment."""
    control = engine_view(arms["control"])
    candidate = engine_view(substituted(arms["candidate"], arms["control"], variable))
    if control != candidate:
        raise KneeError(f"{source}: outside the declared variable the engine would still be "
                        f"started differently:\n  control:   {control}\n  candidate: {candidate}")


def check_server(server: Section, where: str, source: str,
                 options: frozenset[str] | None = None) -> None:
    """Flags knee owns (or a prefix of one), flags that are not the engine's options in full
    (where its options are known), and credentials written into the config, are refused."""
    for flag, value in (server.get("args") or {}).items():
        if flag in OWNED_FLAGS:
            raise KneeError(f"{source}: {where}.args.{flag}: knee sets --{flag} itself; set "
                            f"{OWNED_FLAGS[flag]} instead")
        if flag.split("-")[-1].upper() in secrets.SECRET_WORDS and not isinstance(value, bool):
            raise KneeError(f"{source}: {where}.args.{flag}: a flag named like a credential "
                            "would carry it in the plan and the receipts: give the engine the "
                            f"credential through {where}.secret_env (vLLM reads VLLM_API_KEY, "
                            "HF_TOKEN and the like from its environment)")
    engineflags.check_args(server.get("args") or {}, OWNED_FLAGS, where, source, options)
    check_env(server.get("env") or {}, f"{where}.env", source, f"{where}.secret_env")
    for flag, value in (server.get("args") or {}).items():
        why = secrets.why_secret(typed(value))
        if why:
            raise KneeError(f"{source}: {where}.args.{flag}: the value looks like a credential "
                            f"({why}); pass it through an environment variable named in "
                            f"{where}.secret_env")


def check_env(env: Section, where: str, source: str, secret_key: str) -> None:
    """An environment a config gives the engine (a server's, an engine environment's): no
    variable knee sets itself (its own KNEE_* among them), none that runs other code in every
    process or changes which programs are found, no credential by value or by name."""
    for name, value in env.items():
        if name in OWNED_ENV:
            raise KneeError(f"{source}: {where}.{name}: knee sets it itself; set "
                            f"{OWNED_ENV[name]} instead")
        if name.startswith("KNEE_"):
            raise KneeError(f"{source}: {where}.{name}: knee's own variables are set by knee "
                            "(its environment), never by a config")
        if name in HIJACK_ENV or name.startswith("LD_PRELOAD"):
            raise KneeError(f"{source}: {where}.{name}: a variable that runs other code in "
                            "every process the engine starts, or changes which programs it "
                            "finds, is refused")
        why = secrets.why_secret(value) or (secrets.secret_name(name) and "a credential's name")
        if why:
            raise KneeError(f"{source}: {where}.{name}: the value looks like a credential "
                            f"({why}); a secret never goes into a config: name it in "
                            f"{secret_key}: [{name}] and set it in knee's environment")


def check_servers(config: Config, source: str) -> None:
    """The servers' flags; every one an option of the embedded engine where knee boots it (an
    engine environment's own options are checked when a session starts, knee.measure.session)."""
    rt = config["runtime"]
    runtime = runtimes.of(config)
    # the embedded engine's options are known; an engine environment's or image's are its own
    options = engineflags.recorded() if runtime.engine_env and "engine" not in rt else None
    check_server(config["server"], "server", source, options)
    check_env(rt.get("engine", {}).get("env") or {}, "runtime.engine.env", source,
              "server.secret_env")
    for arm in ARMS:
        check_server(config["arms"].get(arm) or {}, f"arms.{arm}", source, options)
    if not runtime.boots and config["variable"] != "none":
        check_two_servers(rt["servers"], source)


def same_server(a: str, b: str) -> bool:
    """Two URLs that reach one server: scheme, host and port alike (the default port where
    none is written) and the same path but for a trailing slash."""
    x, y = urlsplit(a), urlsplit(b)
    port = {"http": 80, "https": 443}
    return ((x.scheme, x.hostname, x.port or port.get(x.scheme), x.path.rstrip("/")) ==
            (y.scheme, y.hostname, y.port or port.get(y.scheme), y.path.rstrip("/")))


def check_two_servers(servers: Section, source: str) -> None:
    """An A/B of external servers measures two servers: one URL for both arms would compare a
    server with itself and call the difference the variable's (an A/A, variable: none, may)."""
    control, candidate = servers["control"], servers["candidate"]
    for key in ("url", "metrics_url"):
        if key in control and key in candidate and same_server(control[key], candidate[key]):
            raise KneeError(f"{source}: runtime.servers.candidate.{key}: {candidate[key]!r} is "
                            f"the control's server too ({control[key]!r}): both arms would "
                            "measure one server; name each arm's own (one server against "
                            "itself is an A/A: variable: none)")


def _flag_value(value: object) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def server_argv(python: str, arm: Section, model_path: str, served_name: str,
                host: str, port: int) -> list[str]:
    """The engine's argv as a list: never a shell string built from config."""
    argv = [python, "-m", "vllm.entrypoints.openai.api_server",
            "--model", model_path, "--served-model-name", served_name,
            "--host", host, "--port", str(port)]
    for flag, value in sorted(arm.get("args", {}).items()):
        if value is True:
            argv.append(f"--{flag}")
        elif value is not False and value is not None:
            argv += [f"--{flag}", _flag_value(value)]
    if arm.get("speculative_config"):
        argv += ["--speculative-config", _flag_value(models.served_spec(arm["speculative_config"]))]
    return argv


ARG_LIMIT = 128 * 1024 - 1  # Linux's MAX_ARG_STRLEN: one word of an argv, its NUL included
ARGV_LIMIT = 1 << 20  # the whole argv, well under ARG_MAX with the environment beside it


def check_argv(arms: Section, source: str) -> None:
    """Each arm's engine argv is one the operating system can start (a word over 128 KiB, or
    an argv of megabytes, fails the exec after the session has begun)."""
    for name, arm in arms.items():
        argv = server_argv("python", arm, "model", "served", "127.0.0.1", 8000)
        longest = max(argv, key=lambda w: len(w.encode()))
        flag = next((w for w in reversed(argv[:argv.index(longest)]) if w.startswith("--")), "")
        if len(longest.encode()) > ARG_LIMIT:
            raise KneeError(f"{source}: arms.{name}: {flag} {longest[:60]!r}...: "
                            f"{len(longest.encode())} bytes, over the {ARG_LIMIT} one argument "
                            "of a program may have")
        if (total := sum(len(w.encode()) + 1 for w in argv)) > ARGV_LIMIT:
            raise KneeError(f"{source}: arms.{name}: the engine's arguments are {total} bytes "
                            f"together, over the {ARGV_LIMIT} an engine is started with; the "
                            f"longest: {flag} ({len(longest.encode())} bytes)")

