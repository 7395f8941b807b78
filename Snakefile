# knee: one config file -> a paired, audited speculative-decoding experiment on vLLM.
from snakemake.utils import min_version

min_version("9.11")


# One engine session at a time on the machine that runs the jobs (profiles/default sets
# knee_session=1); "local" scope: jobs submitted to a cluster are not limited by it.
resource_scopes:
    knee_session="local",


# The experiment: `--config experiment=FILE` (config/config.yaml by default), read by knee
# itself; see workflow/rules/load.smk.
include: "workflow/rules/load.smk"


# `snakemake --report results/NAME/report.html`: this text, the verdict, the comparison table,
# the figures and the tidy tables (outputs marked with report())
report: "workflow/report/workflow.rst"


if "experiments" in config:

    include: "workflow/rules/experiments.smk"

    onerror:
        for name in EXPERIMENTS:
            shell(f"knee cleanup --root results/{name} --docker")

    rule all:
        default_target: True
        input:
            [f"results/{name}/MANIFEST.sha256" for name in EXPERIMENTS],
            f"{CAMPAIGN}/README.md",

else:

    include: "workflow/rules/common.smk"
    include: "workflow/rules/engine.smk"
    include: "workflow/rules/image.smk"
    include: "workflow/rules/session.smk"
    include: "workflow/rules/protocol.smk"
    include: "workflow/rules/metrics.smk"
    include: "workflow/rules/compare.smk"
    include: "workflow/rules/recommend.smk"
    include: "workflow/rules/readme.smk"
    include: "workflow/rules/exports.smk"

    onerror:
        shell("knee cleanup --root {R} {CLEANUP_FLAGS}")

    rule all:
        default_target: not IN_MODULE
        input:
            f"{R}/MANIFEST.sha256",
