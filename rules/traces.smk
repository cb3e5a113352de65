# Stage 1: a lossless canonical job table per cluster, then its training and validation windows.


rule synth_trace:
    output:
        trace="results/{cluster}/raw/synthetic.log",
    log:
        "logs/{cluster}/synth_trace.log",
    benchmark:
        "benchmarks/{cluster}/synth_trace.tsv"
    conda:
        "../envs/traces.yaml"
    params:
        start=lambda w: cluster_cfg(w)["synthetic"]["start"],
        days=lambda w: cluster_cfg(w)["synthetic"]["days"],
        seed=lambda w: config["seed"] + CLUSTERS.index(w.cluster),
    shell:
        "python -m mirage trace synth {wildcards.cluster} --seed {params.seed} --start {params.start}"
        " --days {params.days} --out {output.trace} > {log} 2>&1"


# Downloads run where Snakemake runs: compute nodes of a cluster often have no internet.
localrules:
    fetch_trace,


rule fetch_trace:
    output:
        trace="results/{cluster}/raw/{file}.log",
    log:
        "logs/{cluster}/fetch_{file}.log",
    wildcard_constraints:
        file="|".join(name.removesuffix(".log") for name, _ in PUBLISHED.values()),
    conda:
        "../envs/traces.yaml"
    shell:
        "python -m mirage trace fetch {wildcards.cluster} --out {output.trace} > {log} 2>&1"


rule clean_trace:
    input:
        raw=raw_trace,
    output:
        clean="results/{cluster}/trace/clean.parquet",
        quarantine="results/{cluster}/trace/quarantine.csv",
        report="results/{cluster}/trace/clean_report.json",
    log:
        "logs/{cluster}/clean_trace.log",
    benchmark:
        "benchmarks/{cluster}/clean_trace.tsv"
    conda:
        "../envs/traces.yaml"
    params:
        flags=clean_flags,
    shell:
        "python -m mirage trace clean {input.raw} --cluster {wildcards.cluster} {params.flags}"
        " --out {output.clean} --quarantine {output.quarantine} --report {output.report}"
        " > {log} 2>&1"


rule split_trace:
    input:
        clean="results/{cluster}/trace/clean.parquet",
    output:
        train="results/{cluster}/trace/train.parquet",
        validation="results/{cluster}/trace/validation.parquet",
    log:
        "logs/{cluster}/split_trace.log",
    benchmark:
        "benchmarks/{cluster}/split_trace.tsv"
    conda:
        "../envs/traces.yaml"
    params:
        windows=lambda w: cluster_cfg(w)["windows"],
        history=config["split"]["history_hours"],
        horizon=config["split"]["horizon_hours"],
    shell:
        "python -m mirage trace split {input.clean}"
        " --train-start {params.windows[train][start]} --train-end {params.windows[train][end]}"
        " --train-out {output.train}"
        " --validation-start {params.windows[validation][start]}"
        " --validation-end {params.windows[validation][end]}"
        " --validation-out {output.validation}"
        " --history-hours {params.history} --horizon-hours {params.horizon} > {log} 2>&1"


rule profile_trace:
    input:
        clean="results/{cluster}/trace/clean.parquet",
    output:
        profile="results/{cluster}/trace/profile.json",
        figure="results/{cluster}/figures/trace_profile.png",
    log:
        "logs/{cluster}/profile_trace.log",
    benchmark:
        "benchmarks/{cluster}/profile_trace.tsv"
    conda:
        "../envs/report.yaml"
    params:
        label=lambda w: cluster_cfg(w)["label"],
    shell:
        "python -m mirage trace profile {input.clean} --out {output.profile}"
        " --figure {output.figure} --label '{params.label}' > {log} 2>&1"


rule traces:
    input:
        expand("results/{cluster}/figures/trace_profile.png", cluster=CLUSTERS),
        expand(
            "results/{cluster}/trace/{split}.parquet", cluster=CLUSTERS, split=SPLITS
        ),
        expand("results/{cluster}/trace/clean_report.json", cluster=CLUSTERS),
