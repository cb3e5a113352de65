# Mirage: learning when to resubmit a long-running service on a batch GPU cluster.
#
#   raw traces -> clean -> train/validation split -> (samples -> features -> models ->
#   evaluation -> figures, in later stages)
#
# Default: calibrated synthetic traces, no network. Real traces: --configfile config/paper.yaml
# (publisher's files) or config/ls6-real.yaml (a local file). Science parameters live in the
# config (validated against config/schema.yaml); threads and resources in the rules/profiles.


# A --configfile replaces the default rather than being merged into it, so a config naming one
# cluster runs that cluster only.
if not config:

    configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/traces.smk"
include: "rules/sim.smk"
include: "rules/samples.smk"
include: "rules/learn.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        rules.traces.input,
        rules.fidelity.input,
        rules.samples.input,
        rules.evaluation.input,
        rules.report.output,
