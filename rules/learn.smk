# Stage 3: fit every policy on the training samples (per cluster, simulator mode and chain size),
# then evaluate all of them alike on the validation samples.


rule fit_policy:
    input:
        samples="results/{cluster}/{mode}/samples/summary.json",
    output:
        model=directory("results/{cluster}/{mode}/models/n{nodes}/{policy}"),
    log:
        "logs/{cluster}/{mode}/fit_{policy}_n{nodes}.log",
    benchmark:
        "benchmarks/{cluster}/{mode}/fit_{policy}_n{nodes}.tsv"
    conda:
        "../envs/learn.yaml"
    threads: lambda w: 2 if w.policy in ("rf", "rf_tuned", "xgb", "xgb_tuned") else 1
    resources:
        gpu=gpus,
    params:
        samples=lambda w: f"results/{w.cluster}/{w.mode}/samples",
        seed=config["seed"],
        params=lambda w: json.dumps(
            config["policies"].get("params", {}).get(w.policy, {})
        ),
        c_I=config["policies"]["costs"]["interruption"],
        c_O=config["policies"]["costs"]["overlap"],
        device=config["policies"].get("device", "cpu"),
    shell:
        "python -m mirage fit {wildcards.policy} --samples {params.samples}"
        " --chain-nodes {wildcards.nodes} --seed {params.seed} --params '{params.params}'"
        " --c-I {params.c_I} --c-O {params.c_O} --device {params.device}"
        " --threads {threads} --out {output.model} > {log} 2>&1"


rule evaluate:
    input:
        samples=expand(
            "results/{{cluster}}/{mode}/samples/summary.json",
            mode=MODES,
        ),
        models=expand(
            "results/{{cluster}}/{mode}/models/n{nodes}/{policy}",
            mode=MODES,
            nodes=CHAIN_NODES,
            policy=POLICIES,
        ),
    output:
        table="results/{cluster}/evaluation.csv",
        markdown="results/{cluster}/evaluation.md",
        outcomes="results/{cluster}/outcomes.parquet",
        fits="results/{cluster}/fits.csv",
        figures=directory("results/{cluster}/figures/evaluation"),
    log:
        "logs/{cluster}/evaluate.log",
    benchmark:
        "benchmarks/{cluster}/evaluate.tsv"
    conda:
        "../envs/learn.yaml"
    params:
        runs=lambda w: " ".join(
            f"--run {m} results/{w.cluster}/{m}/samples results/{w.cluster}/{m}/models"
            for m in MODES
        ),
        policies=" ".join(POLICIES),
        c_I=config["policies"]["costs"]["interruption"],
        c_O=config["policies"]["costs"]["overlap"],
    shell:
        "python -m mirage evaluate {params.runs} --policies {params.policies}"
        " --c-I {params.c_I} --c-O {params.c_O} --out-dir results/{wildcards.cluster}"
        " --figures-dir {output.figures} > {log} 2>&1"


rule evaluation:
    input:
        expand("results/{cluster}/evaluation.csv", cluster=CLUSTERS),
