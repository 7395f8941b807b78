checkpoint decide:
    """Stopping by precision: after pair n, the comparison and bar of pairs 1..n decide one more
    pair or stop (knee.plan.stopping). A receipt: made once, never recomputed by a rerun."""
    input:
        plan=ancient(at(knee_layout.PLAN)),
        raw=ancient(get_pairs_raw),
    output:
        protected(at(knee_layout.look("{n}"))),
    log:
        at(knee_layout.log("protocol/after-pair-{n}")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    shell:
        "knee decide --plan {input.plan} --pairs {wildcards.n} --inputs {input.raw}"
        " --out {output} > {log} 2>&1"


rule realized:
    """The realized protocol: how many pairs ran, the sessions, every look's decision."""
    input:
        plan=ancient(at(knee_layout.PLAN)),
        decisions=get_decisions,
        stops=get_all_sessions("stop"),
    output:
        at(knee_layout.REALIZED),
    log:
        at(knee_layout.log("protocol/realized")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    shell:
        "knee realized --plan {input.plan} --out {output} {input.decisions} > {log} 2>&1"
