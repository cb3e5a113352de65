# Stage 3: fit every policy on the training samples (per cluster, simulator mode and chain size),
# then evaluate all of them alike on the validation samples.

#: every fit job: (rule name, its policies, threads, whether seeded with seed + k). The policies
#: that fit in seconds (BATCHED) in one process: a process per policy would spend more starting
#: Python and reading the samples than most of them take to fit. The torch policies with the
#: config's seed in one process per group (one GPU where the config trains on cuda; a tuned
#: policy takes its untuned twin's final fit there): the compact nets (dqn*, pg*, ppo*) on one
#: thread, the history models (transformer*, moe*, pg_transformer) on two, a fixed count: their
#: results depend on it (TORCH_GROUPS). The seeded torch policies (reinforcement learning) with
#: training seed seed + k, one job per group and k (policies.training_seeds): models/nK/POLICY-seedk.
FIT_JOBS = (
    ([("fit_policies", BATCHED, 1, False)] if BATCHED else [])
    + [(f"fit_{g}", p, n, False) for g, (p, n) in TORCH_GROUPS.items()]
    + [(f"fit_{g}_seed", p, n, True) for g, (p, n) in SEEDED_TORCH_GROUPS.items()]
)


#: where the fits run: a cluster's samples, and with a rolling-origin evaluation every fold's
#: (rules/rolling.smk), its fit rules named with _fold
FIT_PLACES = [("", "{cluster}/{mode}")] + (
    [("_fold", "{cluster}/folds/{fold}/{mode}")] if ROLLING else []
)


for suffix, place in FIT_PLACES:
    for name, policies, n_threads, seeded in FIT_JOBS:
        replica = "-seed{k}" if seeded else ""

        rule:
            name:
                name + suffix
            input:
                samples=f"{R}/{place}/samples/summary.json",
            output:
                models=[
                    directory(f"{R}/{place}/models/n{{nodes}}/{policy}{replica}")
                    for policy in policies
                ],
            log:
                f"{LOGS}/{place}/{name.replace('_seed', '_seed{k}')}_n{{nodes}}.log",
            benchmark:
                f"{BENCH}/{place}/{name.replace('_seed', '_seed{k}')}_n{{nodes}}.tsv"
            # the forests make fit_policies the longest jobs of a run (4-7 minutes each on
            # real ls6): started first, they do not leave one core running the last of them
            priority: int(name == "fit_policies")
            conda:
                "../envs/learn.yaml"
            threads: n_threads
            resources:
                # the batch policies never use a GPU
                **({} if name == "fit_policies" else {"gpu": GPUS}),
            params:
                samples=parent("samples"),
                policies=" ".join(policies),
                seed=(lambda w: config["seed"] + int(w.k)) if seeded else config["seed"],
                params=fit_params(policies),
                costs=COST_FLAGS,
                device=config["policies"].get("device", "cpu"),
                code=code("mirage.policies.cli"),
            shell:
                "python -m mirage fit {params.policies} --samples {params.samples}"
                " --chain-nodes {wildcards.nodes} --seed {params.seed} --params '{params.params}'"
                " {params.costs} --device {params.device}"
                " --threads {threads} --out {output.models} > {log} 2>&1"


if REPLAYED:

    rule decide_twin:
        # the twin decides from the queue a user sees, which the sample tables lack: it is fitted
        # on the training split's jobs and replayed on every validation sample of the chain size
        # (each episode re-run and checked against the stored points); twin_tuned first chooses
        # its quantile level, tolerance and plan veto (the plan rule: its overlap weight) by
        # time-ordered cross-fitting on the training samples. evaluate reads the first submits
        # like any fitted policy's
        input:
            **SPLIT,
            samples=f"{R}/{{cluster}}/{{mode}}/samples/summary.json",
            description=description,
        output:
            models=directory(f"{R}/{{cluster}}/{{mode}}/models/n{{nodes}}/{{replayed}}"),
        log:
            f"{LOGS}/{{cluster}}/{{mode}}/decide_{{replayed}}_n{{nodes}}.log",
        benchmark:
            f"{BENCH}/{{cluster}}/{{mode}}/decide_{{replayed}}_n{{nodes}}.tsv"
        wildcard_constraints:
            replayed="|".join(REPLAYED),
        conda:
            "../envs/learn.yaml"
        threads: 1
        params:
            samples=parent("samples"),
            trace=parent("train"),
            seed=config["seed"],
            params=lambda w: fit_params([w.replayed]),
            costs=COST_FLAGS,
            cluster_file=cluster_file_flag,
            code=code("mirage.samples.cli", "mirage.twin.cli"),
        shell:
            "python -m mirage samples twin --policy {wildcards.replayed}"
            " --cluster {wildcards.cluster} --mode {wildcards.mode} {params.cluster_file}"
            " --trace-dir {params.trace} --samples {params.samples}"
            " --chain-nodes {wildcards.nodes} --seed {params.seed}"
            " --params '{params.params}' {params.costs}"
            " --out {output.models} > {log} 2>&1"


if CURVE_POLICIES:

    rule learning_curve:
        # a reinforcement-learning policy fitted with every curve seed on the earlier training
        # samples, its greedy decisions on the later ones scored about 60 times per fit, and the
        # plateau of the mean over seeds (mirage.evaluate.curves)
        input:
            samples=f"{R}/{{cluster}}/{{mode}}/samples/summary.json",
        output:
            curves=directory(f"{R}/{{cluster}}/{{mode}}/curves/n{{nodes}}/{{rl}}"),
        log:
            f"{LOGS}/{{cluster}}/{{mode}}/learning_curve_{{rl}}_n{{nodes}}.log",
        benchmark:
            f"{BENCH}/{{cluster}}/{{mode}}/learning_curve_{{rl}}_n{{nodes}}.tsv"
        wildcard_constraints:
            rl="|".join(CURVE_POLICIES),
        conda:
            "../envs/learn.yaml"
        threads: 1
        resources:
            gpu=GPUS,
        params:
            samples=parent("samples"),
            seed=config["seed"],
            seeds=CURVES.get("seeds", 5),
            held_share=CURVES.get("held_share", 0.25),
            params=curve_params,
            costs=COST_FLAGS,
            device=config["policies"].get("device", "cpu"),
            code=code("mirage.evaluate.cli", "mirage.policies.curves"),
        shell:
            "python -m mirage curves {wildcards.rl} --samples {params.samples}"
            " --chain-nodes {wildcards.nodes} --seed {params.seed} --seeds {params.seeds}"
            " --held-share {params.held_share} --params '{params.params}' {params.costs}"
            " --device {params.device} --threads {threads} --out {output.curves} > {log} 2>&1"


#: the evaluations: a cluster's (rule evaluate, its tables in the report) and with a
#: rolling-origin evaluation every fold's (rule evaluate_fold, pooled by rule rolling)
EVALUATIONS = [("evaluate", "{cluster}")] + (
    [("evaluate_fold", "{cluster}/folds/{fold}")] if ROLLING else []
)


for name, place in EVALUATIONS:
    # in expand: the place's wildcards kept for the rule, {mode} and the others filled
    kept = place.replace("{", "{{").replace("}", "}}")

    rule:
        name:
            name
        input:
            samples=expand(f"{R}/{kept}/{{mode}}/samples/summary.json", mode=MODES),
            models=expand(
                f"{R}/{kept}/{{mode}}/models/n{{nodes}}/{{policy}}",
                mode=MODES,
                nodes=CHAIN_NODES,
                policy=MODELS,
            ),
        output:
            table=evaluation_table(place, "evaluation", "evaluation"),
            markdown=f"{R}/{place}/evaluation.md",
            outcomes=f"{R}/{place}/outcomes.parquet",
            fits=evaluation_table(place, "fits", "fits"),
            lead_sweep=f"{R}/{place}/lead_sweep.csv",
            seeds=evaluation_table(place, "seeds", "training seeds"),
        log:
            f"{LOGS}/{place}/evaluate.log",
        benchmark:
            f"{BENCH}/{place}/evaluate.tsv"
        conda:
            "../envs/learn.yaml"
        params:
            runs=evaluation_runs(place),
            policies=" ".join(POLICIES),
            label=lambda w: cluster_cfg(w)["label"],
            seeds=TRAINING_SEEDS,
            costs=COST_FLAGS,
            out=parent("table"),
            code=code("mirage.evaluate.cli"),
        shell:
            "python -m mirage evaluate {params.runs} --policies {params.policies}"
            " --label '{params.label}' --training-seeds {params.seeds} {params.costs} --out-dir {params.out} > {log} 2>&1"


rule evaluation:
    input:
        expand(f"{R}/{{cluster}}/evaluation.csv", cluster=CLUSTERS),
