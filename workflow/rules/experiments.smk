# Several experiments in one invocation: --config experiments=[a.yaml,b.yaml] (or a config
# file with an `experiments:` list). Each experiment is this workflow again, as a module with
# its own config, plan and results/<name>/; its rules are prefixed with the experiment's name.
# The engine environment, and a generated model that several experiments share, are built once.
from knee.plan import config as knee_config
from knee.plan import configfile as knee_configfile
from knee import deps as knee_deps
from knee.core import layout as knee_layout
from knee.core.errors import KneeError

try:
    # every entry a file name of a regular file, checked before any is read
    knee_configfile.check_experiment_list(config["experiments"])
except KneeError as e:
    raise WorkflowError(str(e)) from None
EXPERIMENTS = {}
MODELS = set()
for path in config["experiments"]:
    try:
        raw = knee_config.load_raw(path)
        checked = knee_config.validate(dict(raw), path)
    except KneeError as e:
        raise WorkflowError(str(e)) from None
    exp = checked["name"]
    if exp in EXPERIMENTS:
        raise WorkflowError(f"{path}: name: {exp!r} is also the name of {EXPERIMENTS[exp]}")
    EXPERIMENTS[exp] = path
    model = knee_config.model_ref(checked)["path"]
    exp_ = f"{exp}_"  # the rule-name prefix: `as exp_*` below reads this variable
    # the module's own name, apart from the experiment's: a module named after a name of the
    # Snakefile's own (workflow, rules, config) would shadow it
    mod = f"knee-experiment-{exp}"

    module:
        name: mod
        snakefile:
            "../../Snakefile"
        config:
            {**raw, "knee_source": path}

    if not MODELS:

        use rule * from mod exclude all as exp_*

    elif model in MODELS:

        use rule * from mod exclude all, engine_env, tiny_model as exp_*

    else:

        use rule * from mod exclude all, engine_env as exp_*

    MODELS.add(model)


CAMPAIGN = f"results/{knee_configfile.campaign_folder(EXPERIMENTS)}"
try:
    knee_configfile.check_campaign_page(CAMPAIGN, list(EXPERIMENTS))
except KneeError as e:
    raise WorkflowError(str(e)) from None


rule campaign:
    """One page over the experiments of this invocation: which k won at which concurrency."""
    input:
        [f"results/{name}/{knee_layout.MANIFEST}" for name in EXPERIMENTS],
        code=knee_deps.code_files("campaign"),
    output:
        f"{CAMPAIGN}/README.md",
    log:
        f"{CAMPAIGN}/campaign.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    params:
        folders=[f"results/{name}" for name in EXPERIMENTS],
    shell:
        "knee campaign --out {output} {params.folders} > {log} 2>&1"
