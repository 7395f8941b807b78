rule compare:
    """Validate that both arms saw the same requests, then compute deltas."""
    input:
        plan=f"{R}/plan.json",
        realized=get_realized,
        raw=get_all_raw,
        code=get_code("compare"),
    output:
        json=f"{R}/comparison/comparison.json",
    log:
        f"{R}/logs/compare.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    shell:
        "knee compare --plan {input.plan} --out-json {output.json} --record-invalid" " > {log} 2>&1"


rule bar:
    """Judge the pre-registered bar per pair and overall."""
    input:
        plan=f"{R}/plan.json",
        comparison=rules.compare.output.json,
        realized=get_realized,
        boots=get_all_sessions("boot"),
        code=get_code("bar"),
    output:
        json=f"{R}/comparison/bar.json",
        md=f"{R}/comparison/comparison.md",
        html=report(
            f"{R}/comparison/verdict.html",
            caption="../report/verdict.rst",
            category="Verdict",
        ),
    log:
        f"{R}/logs/bar.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    shell:
        "knee bar --plan {input.plan} --comparison {input.comparison} --boots {input.boots}"
        " --out {output.json} --out-md {output.md} --out-html {output.html} > {log} 2>&1"
