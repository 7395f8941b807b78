rule tables:
    """Tidy tables for a notebook: the comparison's rows and every request (derived only)."""
    input:
        plan=at(knee_layout.PLAN),
        comparison=rules.compare.output.json,
        raw=get_all_raw,
        realized=get_realized,
        code=get_code("tables"),
    output:
        rows=report(
            at(knee_layout.ROWS),
            caption="../report/rows.rst",
            category="Comparison",
        ),
        requests=at(knee_layout.REQUESTS),
    log:
        at(knee_layout.log("tables")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    shell:
        "knee tables --plan {input.plan} --comparison {input.comparison}"
        " --inputs {input.raw} {input.realized} --out-rows {output.rows}"
        " --out-requests {output.requests} > {log} 2>&1"


rule crate:
    """The results folder as a Workflow Run RO-Crate, its inputs copied under workflow/."""
    input:
        readme=rules.readme.output,
        tables=rules.tables.output,
        bar=rules.bar.output,
        snakefile=f"{workflow.basedir}/Snakefile",
        config=CONFIG_FILES,
        prompts=PROMPT_FILES,
        prediction=get_prediction,
        code=get_code("crate"),
    output:
        metadata=at(knee_layout.CRATE),
        copies=WORKFLOW_COPIES,
    log:
        at(knee_layout.log("crate")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    params:
        results=get_output_dir,
    shell:
        "knee crate {params.results} --snakefile {input.snakefile:q} --config {input.config:q}"
        " > {log} 2>&1"


rule manifest:
    """sha256 of every raw and derived file, written last."""
    input:
        rules.readme.output,
        rules.tables.output,
        rules.crate.output,
    output:
        at(knee_layout.MANIFEST),
    log:
        at(knee_layout.log("manifest")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    params:
        results=get_output_dir,
    shell:
        "knee manifest {params.results} > {log} 2>&1"
