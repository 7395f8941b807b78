rule figures_render:
    """Every figure, from derived files only: each bar rule's pairs against its interval and
    threshold, throughput and TTFT per concurrency, per-position acceptance, fixture classes
    against the control range."""
    input:
        plan=at(knee_layout.PLAN),
        comparison=rules.compare.output.json,
        bar=rules.bar.output.json,
        acceptance=rules.acceptance.output,
        code=get_code("figures"),
    output:
        **{
            f"{name}_png": report(
                at(knee_layout.figure(name, "png")),
                caption=f"../report/{name}.rst",
                category="Figures",
            )
            for name in FIGURES
        },
        **{f"{name}_svg": at(knee_layout.figure(name, "svg")) for name in FIGURES},
    log:
        at(knee_layout.log("figures")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    params:
        out_dir=get_output_dir,
    shell:
        "knee figures --plan {input.plan} --comparison {input.comparison} --bar {input.bar}"
        " --acceptance {input.acceptance} --out-dir {params.out_dir} > {log} 2>&1"


rule figures:
    """Named target: re-render the figures from existing raw data (boots nothing)."""
    input:
        rules.figures_render.output,
    localrule: True


rule readme:
    """The results README, every number linked to the file it came from, and its page."""
    input:
        plan=at(knee_layout.PLAN),
        comparison=rules.compare.output.json,
        bar=rules.bar.output.json,
        acceptance=rules.acceptance.output,
        figures=rules.figures_render.output,
        recommend=rules.recommend.output.json,
        realized=get_realized,
        boots=get_all_sessions("boot"),
        stops=get_all_sessions("stop"),
        caches=get_all_sessions("cache"),
        code=get_code("readme"),
    output:
        md=at(knee_layout.README),
        html=at(knee_layout.PAGE),
    log:
        at(knee_layout.log("readme")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    resources:
        **ANALYSIS_RESOURCES,
    shell:
        "knee readme --plan {input.plan} --comparison {input.comparison} --bar {input.bar}"
        " --acceptance {input.acceptance} --boots {input.boots} --stops {input.stops}"
        " --caches {input.caches} --recommendation {input.recommend}"
        " --out {output.md} --out-html {output.html} > {log} 2>&1"
