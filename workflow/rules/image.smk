rule image:
    """The engine image: its pinned digest checked against the reference, pulled, its engine
    versions read (docker runtime only)."""
    input:
        plan=f"{R}/plan.json",
    output:
        f"{R}/receipts/image.json",
    log:
        f"{R}/logs/image.log",
    localrule: True
    conda:
        "../../envs/workflow.yaml"
    shell:
        "knee image --plan {input.plan} --out {output} > {log} 2>&1"
