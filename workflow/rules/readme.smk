rule figure_throughput:
    """Output throughput per concurrency point, both arms."""
    input:
        comparison=rules.compare.output.json,
        code="workflow/knee/figures.py",
    output:
        png=report(
            f"{R}/figures/throughput.png",
            caption="../report/throughput.rst",
            category="Figures",
        ),
        svg=f"{R}/figures/throughput.svg",
    log:
        f"{R}/logs/figure_throughput.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    shell:
        "knee figures --comparison {input.comparison} --out-png {output.png} --out-svg {output.svg}"
        " > {log} 2>&1"


rule readme:
    """The results README: every number linked to the file it came from."""
    input:
        plan=f"{R}/plan.json",
        comparison=rules.compare.output.json,
        bar=rules.bar.output,
        acceptance=rules.acceptance.output,
        figure=rules.figure_throughput.output.png,
        boots=get_all_sessions("boot"),
        template="workflow/knee/templates/README.md.j2",
    output:
        f"{R}/README.md",
    log:
        f"{R}/logs/readme.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    shell:
        "knee readme --plan {input.plan} --comparison {input.comparison} --bar {input.bar}"
        " --acceptance {input.acceptance} --out {output} > {log} 2>&1"
