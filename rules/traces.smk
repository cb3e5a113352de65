# Stage 1: a lossless canonical job table per cluster, then its training and validation windows.


rule synth_trace:
    output:
        trace=f"{R}/{{cluster}}/raw/synthetic.log",
        description=f"{R}/{{cluster}}/sim/generator_cluster.yaml",
    log:
        f"{LOGS}/{{cluster}}/synth_trace.log",
    benchmark:
        f"{BENCH}/{{cluster}}/synth_trace.tsv"
    conda:
        "../envs/traces.yaml"
    params:
        start=lambda w: cluster_cfg(w)["synthetic"]["start"],
        days=lambda w: cluster_cfg(w)["synthetic"]["days"],
        seed=lambda w: config["seed"] + CLUSTERS.index(w.cluster),
        overrides=lambda w: json.dumps(cluster_cfg(w)["synthetic"].get("params", {})),
        code=code("mirage.sim.synth", "mirage.sim.cli", "mirage.traces.write"),
    shell:
        "python -m mirage sim synth {wildcards.cluster} --seed {params.seed} --start {params.start}"
        " --days {params.days} --params-json '{params.overrides}' --out {output.trace}"
        " --description-out {output.description} > {log} 2>&1"


# Downloads run where Snakemake runs: compute nodes of a cluster often have no internet.
localrules:
    fetch_trace,


rule fetch_trace:
    output:
        trace=f"{R}/{{cluster}}/raw/{{file}}.log",
    log:
        f"{LOGS}/{{cluster}}/fetch_{{file}}.log",
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
        clean=f"{R}/{{cluster}}/trace/clean.parquet",
        quarantine=f"{R}/{{cluster}}/trace/quarantine.csv",
        report=f"{R}/{{cluster}}/trace/clean_report.json",
    log:
        f"{LOGS}/{{cluster}}/clean_trace.log",
    benchmark:
        f"{BENCH}/{{cluster}}/clean_trace.tsv"
    conda:
        "../envs/traces.yaml"
    params:
        flags=clean_flags,
        code=code("mirage.traces.clean"),
    shell:
        "python -m mirage trace clean {input.raw} --cluster {wildcards.cluster} {params.flags}"
        " --out {output.clean} --quarantine {output.quarantine} --report {output.report}"
        " > {log} 2>&1"


rule split_trace:
    input:
        clean=f"{R}/{{cluster}}/trace/clean.parquet",
    output:
        **SPLIT,
    log:
        f"{LOGS}/{{cluster}}/split_trace.log",
    benchmark:
        f"{BENCH}/{{cluster}}/split_trace.tsv"
    conda:
        "../envs/traces.yaml"
    params:
        windows=lambda w: cluster_cfg(w)["windows"],
        history=config["split"]["history_hours"],
        horizon=config["split"]["horizon_hours"],
        code=code("mirage.traces.split"),
    shell:
        "python -m mirage trace split {input.clean}"
        " --train-start {params.windows[train][start]} --train-end {params.windows[train][end]}"
        " --train-out {output.train}"
        " --validation-start {params.windows[validation][start]}"
        " --validation-end {params.windows[validation][end]}"
        " --validation-out {output.validation}"
        " --history-hours {params.history} --horizon-hours {params.horizon} > {log} 2>&1"


rule summarize_trace:
    input:
        clean=f"{R}/{{cluster}}/trace/clean.parquet",
    output:
        summary=f"{R}/{{cluster}}/trace/summary.json",
    log:
        f"{LOGS}/{{cluster}}/summarize_trace.log",
    benchmark:
        f"{BENCH}/{{cluster}}/summarize_trace.tsv"
    conda:
        "../envs/traces.yaml"
    params:
        code=code("mirage.traces.summary"),
    shell:
        "python -m mirage trace summary {input.clean} --out {output.summary} > {log} 2>&1"


rule traces:
    input:
        expand(f"{R}/{{cluster}}/trace/summary.json", cluster=CLUSTERS),
        expand(
            f"{R}/{{cluster}}/trace/{{split}}.parquet", cluster=CLUSTERS, split=SPLITS
        ),
        expand(f"{R}/{{cluster}}/trace/clean_report.json", cluster=CLUSTERS),
