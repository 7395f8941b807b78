rule window_metrics:
    """Counter deltas, server latency and spec-decode analysis of one instrument window."""
    input:
        unpack(window_files),
        boot=at(knee_layout.receipt("{sid}", "boot")),
        code=get_code("metrics"),
    output:
        at(knee_layout.metrics("{sid}", "{instrument}")),
    log:
        at(knee_layout.log("metrics/{sid}-{instrument}")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    params:
        knee_threshold=config["analysis"]["knee_threshold"],
    shell:
        "knee metrics --raw {input.raw} --before {input.before} --after {input.after}"
        " --boot {input.boot} --knee-threshold {params.knee_threshold} --out {output}"
        " > {log} 2>&1"


rule acceptance:
    """One table of every session's windows: acceptance, knee, step time, ceiling, checks."""
    input:
        metrics=get_all_metrics,
        code=get_code("acceptance"),
    output:
        at(knee_layout.ACCEPTANCE),
    log:
        at(knee_layout.log("acceptance")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    params:
        confidence=PLAN["analysis"]["confidence"],
    shell:
        "knee acceptance --confidence {params.confidence} --out {output} {input.metrics}"
        " > {log} 2>&1"
