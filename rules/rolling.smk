# Rolling-origin evaluation (clusters.<c>.rolling): per fold, the cluster's samples relabelled
# by start (no new simulation: mirage.samples.folds), every policy fitted on the fold's training
# samples and evaluated on its validation samples (the _fold fit rules and rule evaluate_fold,
# rules/learn.smk), then the folds' outcomes pooled into one table of verdicts
# (mirage.evaluate.rolling).

if ROLLING and REPLAYED:
    raise ValueError(
        f"policies {REPLAYED} fit on the training trace's jobs, which span the rolling folds' "
        "validation windows; fix: drop them from policies.names or drop clusters.*.rolling"
    )

#: the pooled tables of every cluster with a rolling-origin evaluation (a target of rule all)
ROLLING_TARGETS = [f"{R}/{c}/rolling.csv" for c in ROLLING]


rule fold_samples:
    input:
        samples=f"{R}/{{cluster}}/{{mode}}/samples/summary.json",
    output:
        samples=f"{R}/{{cluster}}/folds/{{fold}}/{{mode}}/samples/samples.parquet",
        points=f"{R}/{{cluster}}/folds/{{fold}}/{{mode}}/samples/points.parquet",
        summary=f"{R}/{{cluster}}/folds/{{fold}}/{{mode}}/samples/summary.json",
    log:
        f"{LOGS}/{{cluster}}/folds/{{fold}}/{{mode}}/fold_samples.log",
    benchmark:
        f"{BENCH}/{{cluster}}/folds/{{fold}}/{{mode}}/fold_samples.tsv"
    conda:
        "../envs/sim.yaml"
    params:
        samples=parent("samples"),
        windows=lambda w: ROLLING[w.cluster][w.fold],
        out=parent("summary"),
        code=code("mirage.samples.folds"),
    shell:
        "python -m mirage samples fold --samples {params.samples}"
        " --train {params.windows[train][0]} {params.windows[train][1]}"
        " --validation {params.windows[validation][0]} {params.windows[validation][1]}"
        " --out {params.out} --summary {output.summary} > {log} 2>&1"


rule rolling:
    input:
        outcomes=lambda w: [
            f"{R}/{w.cluster}/folds/{fold}/outcomes.parquet"
            for fold in ROLLING[w.cluster]
        ],
    output:
        table=cluster_table("rolling", "rolling-origin"),
        markdown=report(
            f"{R}/{{cluster}}/rolling.md",
            caption="../report/rolling_table.rst",
            category="Tables",
            subcategory="{cluster}",
            labels={"table": "rolling-origin (markdown)", "cluster": "{cluster}"},
        ),
        # every policy's metrics over the pooled folds (what `mirage expected` checks)
        evaluation=f"{R}/{{cluster}}/rolling/evaluation.csv",
        seeds=f"{R}/{{cluster}}/rolling/seeds.csv",
    log:
        f"{LOGS}/{{cluster}}/rolling.log",
    benchmark:
        f"{BENCH}/{{cluster}}/rolling.tsv"
    conda:
        "../envs/report.yaml"
    params:
        folds=lambda w, input: " ".join(
            f"--fold {fold} {path}" for fold, path in zip(ROLLING[w.cluster], input)
        ),
        label=lambda w: cluster_cfg(w)["label"],
        seed=config["seed"],
        verdicts=VERDICT_FLAGS,
        code=code("mirage.evaluate.rolling"),
    shell:
        "python -m mirage rolling {params.folds} --label '{params.label}'"
        " --seed {params.seed} {params.verdicts}"
        " --table {output.table} --out {output.markdown}"
        " --evaluation {output.evaluation} > {log} 2>&1"


rule rolling_evaluation:
    input:
        ROLLING_TARGETS,
