rule compare:
    """Validate that both arms saw the same requests, then compute deltas."""
    input:
        plan=at(knee_layout.PLAN),
        realized=get_realized,
        raw=get_all_raw,
        prediction=get_prediction,
        code=get_code("compare"),
    output:
        json=at(knee_layout.COMPARISON),
    log:
        at(knee_layout.log("compare")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    shell:
        "knee compare --plan {input.plan} --inputs {input.raw} {input.realized}"
        " --prediction {input.prediction} --out-json {output.json} --record-invalid"
        " > {log} 2>&1"


rule bar:
    """Judge the pre-registered bar per pair and overall."""
    input:
        plan=at(knee_layout.PLAN),
        comparison=rules.compare.output.json,
        realized=get_realized,
        boots=get_all_sessions("boot"),
        code=get_code("bar"),
    output:
        json=at(knee_layout.BAR),
        md=at(knee_layout.COMPARISON_MD),
        html=report(
            at(knee_layout.VERDICT_HTML),
            caption="../report/verdict.rst",
            category="Verdict",
        ),
    log:
        at(knee_layout.log("bar")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    shell:
        "knee bar --plan {input.plan} --comparison {input.comparison} --boots {input.boots}"
        " --out {output.json} --out-md {output.md} --out-html {output.html} > {log} 2>&1"
