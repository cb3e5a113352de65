# Stage 2: provisioning samples. For every sample start, the simulator warm-starts from the trace,
# submits the predecessor, and records the state and the outcome of resubmitting at every
# 10-minute decision point. Sharded so a cluster spreads the work and a failed shard reruns alone.


rule sample_shard:
    input:
        **SPLIT,
        description=description,
    output:
        shard=directory(f"{R}/{{cluster}}/{{mode}}/samples/shards/{{shard}}"),
    log:
        f"{LOGS}/{{cluster}}/{{mode}}/sample_shard_{{shard}}.log",
    benchmark:
        f"{BENCH}/{{cluster}}/{{mode}}/sample_shard_{{shard}}.tsv"
    # every shard before the fits (learn.smk), so that the long fit_policies jobs of both modes
    # can start together and the short fits fill the cores at the end
    priority: 2
    conda:
        "../envs/sim.yaml"
    params:
        windows=lambda w: cluster_cfg(w)["windows"],
        every=config["samples"]["every_hours"],
        train_every=config["samples"].get("train_every_hours")
        or config["samples"]["every_hours"],
        nodes=" ".join(map(str, config["samples"]["chain_nodes"])),
        shards=SHARDS,
        cluster_file=cluster_file_flag,
        code=sim_code,
    shell:
        "python -m mirage samples shard --cluster {wildcards.cluster} --mode {wildcards.mode}"
        " {params.cluster_file}"
        " --train {input.train} --validation {input.validation}"
        " --train-window {params.windows[train][start]} {params.windows[train][end]}"
        " --validation-window {params.windows[validation][start]}"
        " {params.windows[validation][end]}"
        " --every-hours {params.every} --train-every-hours {params.train_every}"
        " --chain-nodes {params.nodes}"
        " --shard {wildcards.shard} --shards {params.shards} --out {output.shard} > {log} 2>&1"


# before the fits: it opens the long fit_policies jobs (learn.smk)
rule gather_samples:
    input:
        shards=expand(
            f"{R}/{{{{cluster}}}}/{{{{mode}}}}/samples/shards/{{shard}}",
            shard=range(SHARDS),
        ),
    output:
        samples=f"{R}/{{cluster}}/{{mode}}/samples/samples.parquet",
        points=f"{R}/{{cluster}}/{{mode}}/samples/points.parquet",
        history=f"{R}/{{cluster}}/{{mode}}/samples/history.npz",
        summary=f"{R}/{{cluster}}/{{mode}}/samples/summary.json",
    log:
        f"{LOGS}/{{cluster}}/{{mode}}/gather_samples.log",
    benchmark:
        f"{BENCH}/{{cluster}}/{{mode}}/gather_samples.tsv"
    priority: 2
    conda:
        "../envs/sim.yaml"
    params:
        out=parent("summary"),
        code=code("mirage.samples.cli"),
    shell:
        "python -m mirage samples gather {input.shards} --out {params.out}"
        " --summary {output.summary} > {log} 2>&1"


rule samples:
    input:
        expand(
            f"{R}/{{cluster}}/{{mode}}/samples/summary.json",
            cluster=CLUSTERS,
            mode=MODES,
        ),
