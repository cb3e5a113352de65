import os

# Mirage: learning when to resubmit a long-running service on a batch GPU cluster.
#
#   raw traces -> clean -> train/validation split -> simulated provisioning samples and
#   features -> fitted policies -> evaluation, claims and expected values -> figures,
#   notebooks and report
#
# Default: the bundled real Lonestar6 A100 trace beside synthetic stand-ins for Frontera and
# Longhorn, no network. All three published traces: --configfile config/paper.yaml; your own
# trace: copy config/ls6-real.yaml and give it a `path:`. Science parameters live in the
# config (validated against config/schema.yaml); threads and resources in the rules/profiles.


# Every config layers on the shared science defaults; a --configfile names its own clusters, so
# a config naming one cluster runs that cluster only. Without one: the offline default.
configfile: os.path.join(workflow.basedir, "config", "defaults.yaml")


if "clusters" not in config:

    configfile: os.path.join(workflow.basedir, "config", "config.yaml")


include: "rules/common.smk"
include: "rules/traces.smk"
include: "rules/sim.smk"
include: "rules/samples.smk"
include: "rules/learn.smk"
include: "rules/rolling.smk"
include: "rules/figures.smk"
include: "rules/report.smk"


# `snakemake --report results/<run>/report.html` after a run: every figure and table, captioned.
report: "report/workflow.rst"


rule all:
    default_target: True
    input:
        rules.traces.input,
        rules.fidelity.input,
        rules.samples.input,
        rules.evaluation.input,
        rules.figures.input,
        rules.notebooks.input,
        rules.report.output,
        rules.check_claims.output,
        rules.run_config.output,
        # the rolling-origin evaluation's pooled tables, where the config asks for one
        ROLLING_TARGETS,
