rule session:
    """One engine session: boot -> (scrape, instrument, scrape) x N -> stop. The unit of failure."""
    input:
        plan=ancient(f"{R}/plan.json"),
        engine=rules.engine_env.output,
        model=get_model_input,
        previous=get_previous_stop,
    output:
        **{k: protected(v) for k, v in session_outputs("{sid}").items()},
    log:
        f"{R}/logs/session/{{sid}}.log",
    params:
        measured=get_session_params,
        python=ENGINE_PYTHON,
        root=R,
    shell:
        "knee session --plan {input.plan} --id {wildcards.sid} --root {params.root}"
        " --python {params.python} --engine-info {input.engine} > {log} 2>&1"
