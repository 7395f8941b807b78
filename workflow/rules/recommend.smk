rule recommend:
    """Which k at which load, from derived files only: a k schedule with intervals over boot
    pairs, the crossover, each arm's throughput knee, the ceiling model, and verify.yaml, the
    paired run that checks the prediction. Data that cannot support a recommendation gives a
    refusal with its reason, in the same files."""
    input:
        plan=at(knee_layout.PLAN),
        realized=get_realized,
        raw=get_all_raw,
        metrics=get_all_metrics,
        config=CONFIG_FILES,
        code=get_code("recommend"),
    output:
        json=at(knee_layout.RECOMMENDATION),
        readme=at(knee_layout.RECOMMEND_README),
        verify=at(knee_layout.VERIFY),
        png=report(
            at(knee_layout.recommend_figure("png")),
            caption="../report/recommend.rst",
            category="Recommendation",
        ),
        svg=at(knee_layout.recommend_figure("svg")),
    log:
        at(knee_layout.log("recommend")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    params:
        results=lambda wildcards, input: os.path.dirname(input.plan),
    shell:
        "knee recommend {params.results} --config {input.config:q} --record-refusal"
        " --inputs {input.raw} {input.metrics} {input.realized} > {log} 2>&1"
