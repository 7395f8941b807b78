import json
import re
import os
import shlex
import sys

from knee.plan import config as knee_config
from knee.plan import planfile as knee_planfile
from knee import deps as knee_deps
from knee.plan import places as knee_places
from knee.plan import models as knee_models
from knee.plan import runtimes as knee_runtimes
from knee.core import layout as knee_layout
from knee.core import datasets as knee_datasets
from knee.core import rawfiles as knee_rawfiles
from knee.plan import stopping as knee_stopping
from knee.plan import summary as knee_summary
from knee.plan import together as knee_together
from knee.core.errors import KneeError
from knee.instruments import instrument_names
from knee import instruments as knee_instruments
from snakemake.logging import logger


def load_config():
    """Validate the config (read by load.smk) and plan it."""
    try:
        checked, plan = knee_config.plan_config(config, CONFIG_SOURCE, workflow.basedir)
    except KneeError as e:
        raise WorkflowError(str(e)) from None
    config.update(checked)
    return plan


PLAN = load_config()
R = f"results/{config['name']}"


def at(path):
    """A path of this experiment's results folder (knee.core.layout names every one)."""
    return f"{R}/{path}"


try:
    knee_places.check_results_folder(R, CONFIG_SOURCE)
    knee_planfile.check_bound(PLAN, R, CONFIG_SOURCE)
except KneeError as e:
    raise WorkflowError(str(e)) from None
logger.info(knee_summary.describe(PLAN))

SESSIONS = {s["id"]: s for s in PLAN["protocol"]["sessions"]}
# simultaneous or interleaved order: a job measures both sessions of a pair at once (rule
# session_pair)
TOGETHER = knee_together.is_together(PLAN["protocol"])
INSTRUMENTS = instrument_names(PLAN)
# the bar's figure and every figure of the plan's instruments (knee.instruments.spec.Figure)
FIGURES = [knee_layout.RULES_FIGURE, *(f.name for f in knee_instruments.figures(PLAN))]
PROMPT_FILES = [str(p) for p in knee_instruments.prompt_files(PLAN["instruments"])]
# the prompt files of the datasets the instruments select from (rule dataset makes them)
DATASET_FILES = knee_datasets.files(knee_instruments.dataset_names(PLAN["instruments"]))
# Jobs run `knee` from the environment Snakemake runs in, activated or not.
os.environ.update(PATH=os.pathsep.join([os.path.dirname(sys.executable), os.getenv("PATH", "")]))
# what the runtime is (knee.plan.runtimes): the rules ask it, never its kind
RUNTIME = knee_runtimes.of(PLAN)
CLEANUP_FLAGS = RUNTIME.cleanup_flags
ENGINE_VENV = "resources/engine-venv"
# runtime.engine: an existing engine environment (a GPU host's Python with vLLM); else the
# embedded CPU engine, built by rule engine_env
ENGINE = PLAN["runtime"].get("engine")
# runtime.engine.requirements: an environment knee builds (rule engine_requirements) in a
# folder named by the file's sha256
ENGINE_BUILT = bool(ENGINE) and "requirements" in ENGINE
if ENGINE_BUILT:
    ENGINE_HOME = knee_places.engine_home(ENGINE)
    ENGINE_PYTHON, ENGINE_FACTS = f"{ENGINE_HOME}/bin/python", f"{ENGINE_HOME}/knee-engine.json"
elif ENGINE:
    ENGINE_PYTHON, ENGINE_FACTS = ENGINE["python"], at(knee_layout.facts("engine.json"))
else:
    ENGINE_PYTHON = f"{ENGINE_VENV}/bin/python"
    ENGINE_FACTS = f"{ENGINE_VENV}/knee-engine.json"


def engine_env_words(pythonpath=None):
    """The engine environment's variables as `env` words (shell-quoted), with a folder put
    first on its PYTHONPATH."""
    env = dict((ENGINE or {}).get("env", {}))
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    return " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items()))


MODEL = PLAN["model"]
# the folders made from packaged models: the target's and each arm's draft (knee.plan.models)
PACKAGED_FOLDERS = {
    os.path.basename(path): made
    for path, made in ([(MODEL["path"], MODEL["packaged"])] if MODEL.get("packaged") else [])
    + [
        (knee_models.packaged(name).folder, made)
        for name, made in (PLAN.get("drafts") or {}).items()
    ]
}


wildcard_constraints:
    sid="|".join(SESSIONS),
    n=r"\d+",
    pair=r"\d+",
    instrument="|".join(INSTRUMENTS),


def get_model_input(wildcards):
    """The generated or packaged model is a workflow output; a given model path is used as
    it is. The engine's Python makes it: a finished session measured with a Python this
    machine lacks (another host's) does not ask for it either."""
    if not RUNTIME.boots:
        return []
    made = [MODEL["path"]] if MODEL["generated"] or MODEL.get("packaged") else []
    made += [knee_models.packaged(name).folder for name in PLAN.get("drafts") or {}]
    return unless_published(job_sessions(wildcards), made, needs=[ENGINE_PYTHON])


def get_dataset_input(wildcards):
    """The datasets' prompt files a session sends from; a finished session does not ask for
    them on a machine that lacks them (a fresh clone of published results)."""
    return unless_published(job_sessions(wildcards), DATASET_FILES)


def session_done(sid):
    return all(os.path.exists(p) for p in session_outputs(sid).values())


def job_sessions(wildcards):
    """The sessions a session job measures: one, or both of a pair in simultaneous order."""
    if hasattr(wildcards, "sid"):
        return [wildcards.sid]
    return [s for s in SESSIONS if SESSIONS[s]["pair"] == int(wildcards.pair)]


def unless_published(sids, paths, needs=()):
    """Finished sessions whose engine or model is not on this machine (a fresh clone of
    published results), or what makes them (`needs`), do not ask for them: they neither build
    an engine nor measure again. Anywhere else the inputs stay as they were recorded."""
    done = all(session_done(sid) for sid in sids)
    if done and not all(os.path.exists(p) for p in [*paths, *needs]):
        return []
    return paths


def get_engine_input(wildcards):
    """Facts about the engine a session boots: the embedded engine environment (process
    runtime) or the checked, pulled image (docker)."""
    if RUNTIME.facts_receipt:
        return [at(knee_layout.facts(RUNTIME.facts_receipt))]
    return unless_published(job_sessions(wildcards), [ENGINE_FACTS])


def get_code(command):
    """The source files `knee <command>` runs, derived from the imports (knee.deps): editing
    any of them reruns exactly the steps that run it."""
    return list(knee_deps.code_files(command))


def get_output_dir(wildcards, output):
    """The folder of a rule's first output (the engine env, the figures, the results)."""
    return os.path.dirname(output[0])


def get_previous_stop(wildcards):
    """The protocol in the DAG: a boot waits for the previous session's stop receipt (in
    simultaneous order, both of the pair before)."""
    after = [SESSIONS[sid]["after"] for sid in job_sessions(wildcards)]
    return [at(knee_layout.receipt(a, "stop")) for a in after if a]


# In one invocation of several experiments, an experiment's analysis jobs take the engine token
# too: they never run beside another experiment's session, whose load generator they would
# slow down. A single experiment's analysis waits for its sessions anyway.
ANALYSIS_RESOURCES = {"knee_session": 1} if IN_MODULE else {}

# Where a session job runs and with what allocation (Slurm: its sbatch request).
SESSION_RESOURCES = PLAN["runtime"].get("session_resources", {})


def get_session_params(wildcards):
    """Everything that decides what a session measures: a change reruns the session."""
    arms = [PLAN["arms"][SESSIONS[sid]["arm"]] for sid in job_sessions(wildcards)]
    runtime = knee_config.measured_runtime(PLAN["runtime"])
    return json.dumps(
        {
            "arm": arms[0] if len(arms) == 1 else arms,
            "model": MODEL,
            "runtime": runtime,
            "instruments": PLAN["instruments"],
        },
        sort_keys=True,
    )


def session_outputs(sid):
    out = {
        "boot": at(knee_layout.receipt(sid, "boot")),
        "stop": at(knee_layout.receipt(sid, "stop")),
        "cache": at(knee_layout.receipt(sid, "cache")),
    }
    if not RUNTIME.compile_cache:  # an external server's is not knee's to see
        del out["cache"]
    # compressed, or plain where an older session wrote them so (knee.core.rawfiles)
    gz = knee_rawfiles.suffix(at(knee_layout.raw_dir(sid)), INSTRUMENTS)
    for name in INSTRUMENTS:
        for kind in knee_rawfiles.KINDS:
            raw = f"{knee_layout.raw_dir(sid)}/{name}.{kind}{gz}"
            out[f"{name}_{kind.replace('.', '_')}"] = at(raw)
    return out


def window_files(wildcards):
    """An instrument window's raw files, as its session stored them."""
    out = session_outputs(wildcards.sid)
    return {
        "raw": out[f"{wildcards.instrument}_json"],
        "before": out[f"{wildcards.instrument}_prom_before"],
        "after": out[f"{wildcards.instrument}_prom_after"],
    }


PAIRS_MIN, PAIRS_MAX = knee_stopping.bounds(PLAN["protocol"]["pairs"])


def realized_pairs():
    """How many pairs run: the plan's number or, stopping by precision, what the decide
    checkpoints say (the DAG grows pair by pair; a rerun reads the decisions made)."""
    for n in range(PAIRS_MIN, PAIRS_MAX):
        with open(checkpoints.decide.get(n=n).output[0]) as f:
            if json.load(f)["stop"]:
                return n
    return PAIRS_MAX


def realized_ids(upto=None):
    """The sessions of the pairs that run (or of the first `upto` pairs), in protocol order."""
    n = realized_pairs() if upto is None else upto
    return [sid for sid, s in SESSIONS.items() if s["pair"] <= n]


def get_all_sessions(kind):
    """One output of each session that runs (none where the runtime has no such receipt)."""
    return lambda wildcards: [
        out[kind] for out in map(session_outputs, realized_ids()) if kind in out
    ]


def get_all_metrics(wildcards):
    return [at(knee_layout.metrics(sid, name)) for sid in realized_ids() for name in INSTRUMENTS]


def session_files(ids):
    return [
        path
        for sid in ids
        for key, path in session_outputs(sid).items()
        if key not in ("stop", "cache")
    ]


def get_all_raw(wildcards):
    return session_files(realized_ids())


def get_pairs_raw(wildcards):
    """What a look after pair n reads: every session of pairs 1..n."""
    return session_files(realized_ids(int(wildcards.n)))


def get_decisions(wildcards):
    """The looks made before the run stopped (none when the number of pairs is fixed)."""
    last = min(realized_pairs(), PAIRS_MAX - 1)
    return [at(knee_layout.look(n)) for n in range(PAIRS_MIN, last + 1)]


# a verification run's prediction, sealed in its folder when it is planned (by the plan): what its
# rules read, never the recommendation it was copied from, which a re-render may rewrite
SEALED_PREDICTION = {"prediction": at(knee_layout.PREDICTION)} if "prediction" in PLAN else {}


# the files the crate copies under workflow/ (the sealed prediction is not among them)
WORKFLOW_COPIES = [
    at(p)
    for p in (
        knee_layout.CONFIG_COPY,
        knee_layout.SNAKEFILE_COPY,
        *map(knee_layout.prompt_copy, PROMPT_FILES),
    )
]


def get_prediction(wildcards):
    """A verification run's registered recommendation (config key prediction), sealed."""
    return list(SEALED_PREDICTION.values())


def get_realized(wildcards):
    """The realized protocol receipt, where the run stops by precision."""
    return [] if PAIRS_MIN == PAIRS_MAX else [at(knee_layout.REALIZED)]
