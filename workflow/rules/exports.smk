rule tables:
    """Tidy tables for a notebook: the comparison's rows and every request (derived only)."""
    input:
        plan=f"{R}/plan.json",
        comparison=rules.compare.output.json,
        code=get_code("tables"),
    output:
        rows=report(
            f"{R}/comparison/rows.csv",
            caption="../report/rows.rst",
            category="Comparison",
        ),
        requests=f"{R}/raw/requests.parquet",
    log:
        f"{R}/logs/tables.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    shell:
        "knee tables --plan {input.plan} --comparison {input.comparison}"
        " --out-rows {output.rows} --out-requests {output.requests} > {log} 2>&1"


rule manifest:
    """sha256 of every raw and derived file, written last."""
    input:
        rules.readme.output,
        rules.tables.output,
    output:
        f"{R}/MANIFEST.sha256",
    log:
        f"{R}/logs/manifest.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    params:
        results=get_output_dir,
    shell:
        "knee manifest {params.results} > {log} 2>&1"
