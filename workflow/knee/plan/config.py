"""Load and validate an experiment config, resolve the arms, and make the plan."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from knee import instruments
from knee.core import datasets, metrics, rulekinds
from knee.core.errors import KneeError
from knee.core.jsonio import check
from knee.core.records import Config, Plan, PlannedSession, Section
from knee.core.records.calibration import CalibrationRef
from knee.plan import adjust, configfile, models, places, runtimes, secrets, stopping, together
from knee.plan.arms import (
    ARMS,
    check_argv,
    check_one_variable,
    check_servers,
    resolve_arms,
)
from knee.plan.prediction import prediction_ref


def sha256_of(data: Any) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _fill_defaults(schema: Section, data: Any, root: Section) -> None:
    """Fill schema defaults into data in place (objects only, following $ref and properties)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = root["$defs"][name]
    if not isinstance(data, dict):
        if isinstance(data, list) and isinstance(schema.get("items"), dict):
            for item in data:
                _fill_defaults(schema["items"], item, root)
        return
    for key, sub in schema.get("properties", {}).items():
        if key not in data and "default" in sub:
            data[key] = copy.deepcopy(sub["default"])
        if key in data:
            _fill_defaults(sub, data[key], root)


def validate(config: Config, source: str = "config") -> Section:
    """Validate a config; return a copy with defaults filled. Raises KneeError naming the key."""
    data = copy.deepcopy(config)
    if isinstance(data.get("bar"), dict) and "pairs" in data["bar"]:
        raise KneeError(f"{source}: bar.pairs: {data['bar']['pairs']!r} is no longer a setting: "
                        "every rule is decided on the interval over all pairs, at the bar's "
                        "alpha (bar.alpha, default 0.05); delete bar.pairs")
    schema = instruments.config_schema()
    check("config", data, source, schema)
    _fill_defaults(schema, data, schema)
    check("config", data, source, schema)
    return data


def load_raw(path: Path | str) -> Section:
    return configfile.load(path)


def load(path: Path | str) -> Section:
    return validate(load_raw(path), str(path))


def load_checked(path: Path | str) -> Section:
    """What `knee validate-config` checks on any machine: the file and its plan."""
    cfg = load(path)
    make_plan(cfg, str(path))
    return cfg


def validate_here(path: Path | str) -> Section:
    """`knee validate-config --here`: the file, its plan, and that this machine can boot its
    sessions (the engine CPUs and Python: knee.plan.places.check_here)."""
    cfg = load_checked(path)
    places.check_here(cfg, str(path))
    return cfg


def pair_orders(pairs: int, order: str | list[str], seed: int = 0) -> list[list[str]]:
    """The realized order of every pair: a fixed list, counterbalanced (ABBA: odd pairs as
    control-candidate, even pairs reversed) or randomized (each pair from a seeded draw)."""
    if isinstance(order, list):
        return [list(order) for _ in range(pairs)]
    ab = list(ARMS)
    if order == "counterbalanced":
        return [ab if pair % 2 == 0 else ab[::-1] for pair in range(pairs)]
    import random

    draw = random.Random(f"knee-order-{seed}")
    return [ab if draw.random() < 0.5 else ab[::-1] for _ in range(pairs)]


def sessions(orders: list[list[str]]) -> list[Section]:
    out, previous = [], None
    for pair, order in enumerate(orders, start=1):
        for arm in order:
            sid = f"{pair}-{arm}"
            out.append({"id": sid, "pair": pair, "arm": arm, "after": previous})
            previous = sid
    return out


def model_ref(config: Config) -> Section:
    m = config["model"]
    if "package" in m:
        made = models.packaged(m["package"])
        return {"path": made.folder, "name": m.get("name") or made.name, "generated": False,
                "packaged": made.facts()}
    if "path" in m:
        name = m.get("name") or Path(m["path"]).name
        return {"path": m["path"], "name": name, "generated": False}
    g = m["generate"]
    name = f"tiny-llama-s{g['seed']}-l{g['layers']}-h{g['hidden']}"
    # the shapes the first generator had no flag for, and config-only models, named apart
    name += "".join(f"-{tag}{g[key]}" for key, tag in (("heads", "a"), ("kv_heads", "kv"),
                                                       ("intermediate", "i"))
                    if key in g and (key != "heads" or "kv_heads" in g))
    if g.get("weights") is False:
        name += "-noweights"
    if "logit_scale" in g:
        name += f"-ls{g['logit_scale']:g}".replace("+", "")
    ref = {"path": f"resources/models/{name}", "name": m.get("name") or name, "generated": True}
    return ref | ({"weights": "none: the engine draws random weights (load-format dummy)"}
                  if g.get("weights") is False else {})


def check_bar(config: Config, source: str = "config") -> None:
    """Every bar rule must name a point its instrument measures, and a share of divergent
    requests per instrument an instrument the config measures with."""
    inst = config["instruments"]
    share = config["bar"].get("max_divergent_share")
    for name in share if isinstance(share, dict) else ():
        if name not in inst:
            raise KneeError(f"{source}: bar.max_divergent_share.{name}: {name!r} is not "
                            f"configured under instruments (configured: {', '.join(inst)})")
    for i, rule in enumerate(config["bar"]["rules"]):
        where = f"{source}: bar.rules[{i}]"
        if rule["instrument"] not in inst:
            raise KneeError(f"{where}.instrument: {rule['instrument']!r} is not configured "
                            "under instruments")
        metric = metrics.BY_NAME[rule["metric"]]
        if rulekinds.kind(rule) is rulekinds.GAIN and metric.better == "lower":
            raise KneeError(f"{where}: min_gain_pct {rule['min_gain_pct']!r} on "
                            f"{rule['metric']}, which is better lower ({metric.unit}): a gain "
                            "would read backwards (a longer time passing as a gain); judge it "
                            "with within_pct, or a metric that is better higher")
        spec = instruments.get(rule["instrument"])
        if rule["point"] == "all":
            if not spec.pools or rule["metric"] not in ("decode_rate_p50", "decode_rate_gmean"):
                pooling = [n for n, s in instruments.REGISTRY.items() if s.pools]
                raise KneeError(f"{where}: {rule['metric']} at point 'all' is not a figure "
                                "knee computes (use a single point, or decode_rate_p50 or "
                                "decode_rate_gmean of "
                                f"{' or '.join(pooling)})")
            continue
        assert spec.bar_points is not None  # the schema names only instruments with points
        points = spec.bar_points(inst[rule["instrument"]])
        if rule["point"] not in points:
            raise KneeError(f"{where}.point: {rule['point']!r} is not measured by "
                            f"{rule['instrument']} (its points: {points})")


def workflow_commit(repo: Path | str = ".") -> Section:
    """The git commit of the workflow and whether the work tree differs from it. A copy of the
    workflow without its git history (a host files are carried to) may state the commit it is
    a copy of in KNEE_WORKFLOW_COMMIT: recorded as stated, unverified."""
    import os
    import subprocess

    stated = os.environ.get("KNEE_WORKFLOW_COMMIT", "")
    fallback = {"commit": stated, "dirty": None, "stated_by": "KNEE_WORKFLOW_COMMIT"} \
        if re.fullmatch(r"[0-9a-f]{40}", stated) else {"commit": None, "dirty": None}
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"],
                              capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=30)
        status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                 "--untracked-files=no"],
                                capture_output=True, text=True,
                                encoding="utf-8", errors="replace", timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return fallback
    if head.returncode != 0:
        return fallback
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def check_instruments(config: Config, arms: Section, source: str = "config") -> None:
    """What each configured instrument's section needs of the served arms (its Spec's check)."""
    for name in instruments.names():
        section, check = config["instruments"].get(name), instruments.get(name).check
        if section and check is not None:
            check(section, arms, source)


def measured_sha256(config: Config) -> str:
    """sha256 of the config without where its sessions run (runtime.session_resources) and the
    results' license: the same experiment on a laptop or as Slurm jobs has the same hash."""
    kept = {k: v for k, v in config.items() if k != "license"}
    return sha256_of({**kept, "runtime": measured_runtime(config.get("runtime") or {})})


def measured_runtime(rt: Mapping[str, Any]) -> Section:
    """The runtime section's settings a session's measurement depends on (not where it runs)."""
    return {k: v for k, v in rt.items() if k != "session_resources"}


def plan_config(config: Config, source: str, repo: Path | str) -> tuple[Section, Plan]:
    """The one way a config becomes a plan (the Snakefile and `knee plan` alike): validated
    with its defaults, planned, and stamped with the workflow's commit."""
    checked = validate(config, source)
    return checked, make_plan(checked, source) | {"workflow": workflow_commit(repo)}


def make_plan(config: Config, source: str = "config") -> Plan:
    check_servers(config, source)
    check_no_credential(config, source)
    configfile.check_reserved(config["name"], source)
    arms = resolve_arms(config)
    models.check_drafts(config, arms, source)
    check_argv(arms, source)
    check_one_variable(arms, config["variable"], source)
    check_bar(config, source)
    check_instruments(config, arms, source)
    together.check(config, arms, source)
    check_engine(config, arms, source)
    models.check_served(config, arms, source)
    places.check(config, source)
    lo, hi = stopping.bounds(config["protocol"]["pairs"])
    if lo > hi:
        raise KneeError(f"{source}: protocol.pairs: min {lo} is more than max {hi}")
    prediction = prediction_ref(config["prediction"], source) \
        if "prediction" in config else None
    calibration = adjust.calibration_ref(config, model_ref(config), source)
    return plan_of(config, source, prediction, calibration)


def check_no_credential(config: Config, source: str) -> None:
    """No key or text anywhere in the config looks like a credential: every field reaches the
    plan, and from it the receipts, the README and the crate."""
    hit = secrets.found_in(config)
    if hit:
        where, why = hit
        raise KneeError(f"{source}: {where}: looks like a credential ({why}); a config is "
                        "written into the plan, the receipts and the README, so a secret never "
                        "goes into one: name it in server.secret_env and set it in knee's "
                        "environment")


def plan_of(config: Config, source: str, prediction: Section | None = None,
            calibration: CalibrationRef | None = None) -> Plan:
    """The plan of a checked config (no check, nothing read: the audit re-makes a folder's
    plan from its copy of the config with it); `prediction` is the registered reference of a
    verification run's recommendation, `calibration` the one bar.adjust names
    (knee.plan.adjust)."""
    protocol = config["protocol"]
    pairs = stopping.bounds(protocol["pairs"])[1]
    planned = together.sessions(pairs, config["runtime"], protocol["order"]) \
        if together.is_together(protocol) else \
        sessions(pair_orders(pairs, protocol["order"], protocol["seed"]))
    plan: dict[str, Any] = {  # a Plan once its bar's sha256 is in
        "name": config["name"],
        "question": config.get("question", ""),
        **({"license": config["license"]} if "license" in config else {}),
        "config_file": source,
        "config_sha256": measured_sha256(config),
        "variable": config["variable"],
        "arms": resolve_arms(config),
        "model": model_ref(config),
        "runtime": config["runtime"],
        "protocol": {**protocol, "sessions": planned},
        "instruments": config["instruments"],
        "analysis": config["analysis"],
        "bar": config["bar"],
    }
    if prediction is not None:
        plan["prediction"] = prediction
    if calibration is not None:
        plan["calibration"] = calibration
    if found := models.drafts(plan["arms"]):  # each packaged draft's origin, as the model's
        plan["drafts"] = {name: m.facts() for name, m in found.items()}
    if used := instruments.dataset_names(config["instruments"]):  # each dataset's pins and license
        plan["datasets"] = {name: datasets.get(name).facts() for name in used}
    plan["bar_sha256"] = registered_bar_sha256(cast(Plan, plan))
    if isinstance(protocol["pairs"], dict):
        plan["protocol"]["stopping"] = stopping.RULE
    return cast(Plan, plan)


def registered_bar_sha256(plan: Plan) -> str:
    """The bar's sha256 as registered in a plan, recomputed from the plan's own content (with
    a verification run's prediction and an adjusted bar's calibration)."""
    bar: dict[str, Any] = dict(plan["bar"])
    if "prediction" in plan:
        bar["prediction"] = plan["prediction"]
    if "calibration" in plan:
        bar["calibration"] = plan["calibration"]
    return bar_sha256(bar, plan["protocol"]["sessions"], plan["protocol"]["pairs"])


def bar_sha256(bar: Section, planned: list[PlannedSession],
               pairs: int | Section | None = None) -> str:
    """What is registered before the first boot: the bar (its rules and alpha), the realized
    session order and, when the run stops by precision, the stopping rule."""
    registered = {"bar": bar, "order": [s["id"] for s in planned]}
    if isinstance(pairs, dict):
        registered["stopping"] = {**pairs, "rule": stopping.RULE}
    return sha256_of(registered)


def model_args(config: Config) -> str:
    """The tiny-model generator's flags (numbers only, from the validated config)."""
    g = config["model"].get("generate", {})
    flags = {"seed": g.get("seed"), "layers": g.get("layers"), "hidden": g.get("hidden"),
             "heads": g.get("heads"), "kv-heads": g.get("kv_heads"),
             "intermediate": g.get("intermediate"), "vocab-size": g.get("vocab_size"),
             "max-len": g.get("max_len")}
    out = " ".join(f"--{k} {int(v)}" for k, v in flags.items() if v is not None)
    if "logit_scale" in g:
        out += f" --logit-scale {float(g['logit_scale'])!r}"
    return out + (" --no-weights" if g.get("weights") is False else "")


def check_parallel(gpus: list[int], arms: Mapping[str, Any], source: str) -> None:
    """Each arm's engine spans exactly the GPUs it is given (the product of its parallel
    sizes): vLLM would otherwise leave some idle, or fail only after the boot has begun."""
    for arm, server in arms.items():
        n, said = together.span(server, f"{source}: arms.{arm}")
        if n != len(gpus):
            raise KneeError(
                f"{source}: arms.{arm}: the engine spans {n} GPU(s) ({said}) but "
                f"runtime.gpus names {len(gpus)} ({gpus!r}): set "
                f"server.args.tensor-parallel-size: {len(gpus)}, or name {n} GPU(s)")


def check_engine(config: Config, arms: Section, source: str) -> None:
    """A config-only model is served by an engine that draws its weights (load-format dummy);
    an engine environment and GPUs belong to the process runtime."""
    rt = config["runtime"]
    runtime = runtimes.of(config)
    if "engine" in rt and not runtime.engine_env:
        raise KneeError(f"{source}: runtime.engine: only the process runtime boots an engine "
                        f"environment of knee's choosing, not {runtime.kind!r}")
    gpus = rt.get("gpus")
    if runtime.gpu_ids and gpus is not None and not (
            isinstance(gpus, list) and gpus and all(type(g) is int for g in gpus)):
        raise KneeError(f"{source}: runtime.gpus: {gpus!r}: the process runtime takes a list of "
                        "GPU ids, e.g. [0] (CUDA_VISIBLE_DEVICES)")
    if runtime.gpu_ids and gpus:  # each named once; in simultaneous order, one arm a half
        together.check_named_once(gpus, source)
        halves = together.gpu_sets(rt) if together.is_simultaneous(config["protocol"]) else None
        check_parallel(halves[0] if halves else gpus, arms, source)
    if config["model"].get("generate", {}).get("weights") is False:
        for arm, server in arms.items():
            if server.get("args", {}).get("load-format") != "dummy":
                raise KneeError(
                    f"{source}: model.generate.weights: false writes no weights, so the "
                    f"engine must draw them: arms.{arm} needs server.args load-format: dummy "
                    f"(it has {server.get('args', {}).get('load-format')!r})")
