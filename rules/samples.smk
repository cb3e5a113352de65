# Stage 2: provisioning samples. For every sample start, the simulator warm-starts from the trace,
# submits the predecessor, and records the state and the outcome of resubmitting at every
# 10-minute decision point. Sharded so a cluster spreads the work and a failed shard reruns alone.


rule sample_shard:
    input:
        train="results/{cluster}/trace/train.parquet",
        validation="results/{cluster}/trace/validation.parquet",
    output:
        shard=directory("results/{cluster}/{mode}/samples/shards/{shard}"),
    log:
        "logs/{cluster}/{mode}/sample_shard_{shard}.log",
    benchmark:
        "benchmarks/{cluster}/{mode}/sample_shard_{shard}.tsv"
    conda:
        "../envs/sim.yaml"
    params:
        windows=lambda w: cluster_cfg(w)["windows"],
        every=config["samples"]["every_hours"],
        nodes=" ".join(map(str, config["samples"]["chain_nodes"])),
        shards=SHARDS,
    shell:
        "python -m mirage samples shard --cluster {wildcards.cluster} --mode {wildcards.mode}"
        " --train {input.train} --validation {input.validation}"
        " --train-window {params.windows[train][start]} {params.windows[train][end]}"
        " --validation-window {params.windows[validation][start]}"
        " {params.windows[validation][end]}"
        " --every-hours {params.every} --chain-nodes {params.nodes}"
        " --shard {wildcards.shard} --shards {params.shards} --out {output.shard} > {log} 2>&1"


rule gather_samples:
    input:
        shards=expand(
            "results/{{cluster}}/{{mode}}/samples/shards/{shard}", shard=range(SHARDS)
        ),
    output:
        samples="results/{cluster}/{mode}/samples/samples.parquet",
        points="results/{cluster}/{mode}/samples/points.parquet",
        history="results/{cluster}/{mode}/samples/history.npz",
        summary="results/{cluster}/{mode}/samples/summary.json",
    log:
        "logs/{cluster}/{mode}/gather_samples.log",
    benchmark:
        "benchmarks/{cluster}/{mode}/gather_samples.tsv"
    conda:
        "../envs/sim.yaml"
    shell:
        "python -m mirage samples gather {input.shards}"
        " --out results/{wildcards.cluster}/{wildcards.mode}/samples"
        " --summary {output.summary} > {log} 2>&1"


rule samples:
    input:
        expand(
            "results/{cluster}/{mode}/samples/summary.json",
            cluster=CLUSTERS,
            mode=MODES,
        ),
