rule image:
    """The engine image: its pinned digest checked against the reference, pulled, its engine
    versions read (docker runtime only)."""
    input:
        plan=at(knee_layout.PLAN),
    output:
        at(knee_layout.facts("image.json")),
    log:
        at(knee_layout.log("image")),
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    shell:
        "knee image --plan {input.plan} --out {output} > {log} 2>&1"
