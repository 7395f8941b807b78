if not TOGETHER:

    rule session:
        """One engine session: boot -> (scrape, instrument, scrape) x N -> stop. The unit of failure."""
        input:
            plan=ancient(at(knee_layout.PLAN)),
            engine=ancient(get_engine_input),
            model=ancient(get_model_input),
            datasets=ancient(get_dataset_input),
            previous=ancient(get_previous_stop),
        output:
            **{k: protected(update(v)) for k, v in session_outputs("{sid}").items()},
        log:
            at(knee_layout.log("session/{sid}")),
        conda:
            "../../envs/workflow.yaml"
        resources:
            **SESSION_RESOURCES,
            # one engine at a time where Snakemake runs the jobs itself (several experiments in one
            # invocation would otherwise share the engine CPUs); not a limit on cluster jobs
            knee_session=1,
        params:
            measured=get_session_params,
            python=ENGINE_PYTHON,
        shell:
            "knee session --plan {input.plan} --id {wildcards.sid}"
            " --python {params.python} --engine-info {input.engine} > {log} 2>&1"

else:

    rule session_pair:
        """Simultaneous or interleaved order: both sessions of a pair, their engines up at once
        on their own CPU sets, every window started at the same moment (knee pair), and in
        interleaved order the arms' traffic taking turns. The unit of failure."""
        input:
            plan=ancient(at(knee_layout.PLAN)),
            engine=ancient(get_engine_input),
            model=ancient(get_model_input),
            datasets=ancient(get_dataset_input),
            previous=ancient(get_previous_stop),
        output:
            **{
                f"{arm}_{k}": protected(update(v))
                for arm in ("control", "candidate")
                for k, v in session_outputs(f"{{pair}}-{arm}").items()
            },
        log:
            at(knee_layout.log("session/pair-{pair}")),
        conda:
            "../../envs/workflow.yaml"
        resources:
            **SESSION_RESOURCES,
            knee_session=1,
        params:
            measured=get_session_params,
            python=ENGINE_PYTHON,
        shell:
            "knee pair --plan {input.plan} --pair {wildcards.pair}"
            " --python {params.python} --engine-info {input.engine} > {log} 2>&1"
