# Stage 3: fit every policy on the training samples (per cluster, simulator mode and chain size),
# then evaluate all of them alike on the validation samples.

# every fit rule: `mirage fit` of some policies on one cluster, mode and chain size
FIT = (
    "python -m mirage fit {params.policies} --samples {params.samples}"
    " --chain-nodes {wildcards.nodes} --seed {params.seed} --params '{params.params}'"
    " --c-I {params.c_I} --c-O {params.c_O} --device {params.device}"
    " --threads {threads} --out {output.models} > {log} 2>&1"
)


if BATCHED:

    rule fit_policies:
        # the policies that fit in seconds, in one process: a process per policy would spend more
        # starting Python and reading the samples than most of them take to fit. The forests
        # make these the longest jobs of a run (4-7 minutes each on real ls6): started first
        # (priority), they do not leave one core running the last of them alone at the end
        input:
            samples=f"{R}/{{cluster}}/{{mode}}/samples/summary.json",
        output:
            models=[
                directory(f"{R}/{{cluster}}/{{mode}}/models/n{{nodes}}/{policy}")
                for policy in BATCHED
            ],
        log:
            f"{LOGS}/{{cluster}}/{{mode}}/fit_policies_n{{nodes}}.log",
        benchmark:
            f"{BENCH}/{{cluster}}/{{mode}}/fit_policies_n{{nodes}}.tsv"
        priority: 1
        conda:
            "../envs/learn.yaml"
        threads: 1
        params:
            samples=lambda w, input: str(Path(input.samples).parent),
            policies=" ".join(BATCHED),
            seed=config["seed"],
            params=fit_params(BATCHED),
            c_I=config["policies"]["costs"]["interruption"],
            c_O=config["policies"]["costs"]["overlap"],
            device=config["policies"].get("device", "cpu"),
            code=code("mirage.policies.cli"),
        shell:
            FIT


# The torch policies with the config's seed, in one process per group, cluster, mode and chain
# size (one GPU where the config trains on cuda): a process each would spend about 3 s
# starting Python and torch and reading the samples, and a tuned policy takes its untuned
# twin's final fit here. Two groups (TORCH_GROUPS): the compact nets (dqn*, pg, pg_tuned) on
# one thread, the history models (transformer*, moe*, pg_transformer) on two, a fixed count:
# their results depend on it.
for group, (policies, n_threads) in TORCH_GROUPS.items():

    rule:
        name:
            f"fit_{group}"
        input:
            samples=f"{R}/{{cluster}}/{{mode}}/samples/summary.json",
        output:
            models=[
                directory(f"{R}/{{cluster}}/{{mode}}/models/n{{nodes}}/{policy}")
                for policy in policies
            ],
        log:
            f"{LOGS}/{{cluster}}/{{mode}}/fit_{group}_n{{nodes}}.log",
        benchmark:
            f"{BENCH}/{{cluster}}/{{mode}}/fit_{group}_n{{nodes}}.tsv"
        conda:
            "../envs/learn.yaml"
        threads: n_threads
        resources:
            gpu=GPUS,
        params:
            samples=lambda w, input: str(Path(input.samples).parent),
            policies=" ".join(policies),
            seed=config["seed"],
            params=fit_params(policies),
            c_I=config["policies"]["costs"]["interruption"],
            c_O=config["policies"]["costs"]["overlap"],
            device=config["policies"].get("device", "cpu"),
            code=code("mirage.policies.cli"),
        shell:
            FIT


# the seeded torch policies (reinforcement learning) with training seed seed + k, one job per
# group and k (policies.training_seeds): models/nK/POLICY-seedk
for group, (policies, n_threads) in SEEDED_TORCH_GROUPS.items():

    rule:
        name:
            f"fit_{group}_seed"
        input:
            samples=f"{R}/{{cluster}}/{{mode}}/samples/summary.json",
        output:
            models=[
                directory(
                    f"{R}/{{cluster}}/{{mode}}/models/n{{nodes}}/{policy}-seed{{k}}"
                )
                for policy in policies
            ],
        log:
            f"{LOGS}/{{cluster}}/{{mode}}/fit_{group}_seed{{k}}_n{{nodes}}.log",
        benchmark:
            f"{BENCH}/{{cluster}}/{{mode}}/fit_{group}_seed{{k}}_n{{nodes}}.tsv"
        conda:
            "../envs/learn.yaml"
        threads: n_threads
        resources:
            gpu=GPUS,
        params:
            samples=lambda w, input: str(Path(input.samples).parent),
            policies=" ".join(policies),
            seed=lambda w: config["seed"] + int(w.k),
            params=fit_params(policies),
            c_I=config["policies"]["costs"]["interruption"],
            c_O=config["policies"]["costs"]["overlap"],
            device=config["policies"].get("device", "cpu"),
            code=code("mirage.policies.cli"),
        shell:
            FIT


if REPLAYED:

    rule decide_twin:
        # the twin decides from the queue a user sees, which the sample tables lack: it is fitted
        # on the training split's jobs and replayed on every validation sample of the chain size
        # (each episode re-run and checked against the stored points); twin_tuned first chooses
        # its quantile level, tolerance and plan veto (the plan rule: its overlap weight) by
        # time-ordered cross-fitting on the training samples. evaluate reads the first submits
        # like any fitted policy's
        input:
            train=f"{R}/{{cluster}}/trace/train.parquet",
            validation=f"{R}/{{cluster}}/trace/validation.parquet",
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
            samples=lambda w, input: str(Path(input.samples).parent),
            trace=lambda w, input: str(Path(input.train).parent),
            seed=config["seed"],
            params=lambda w: fit_params([w.replayed]),
            c_I=config["policies"]["costs"]["interruption"],
            c_O=config["policies"]["costs"]["overlap"],
            cluster_file=cluster_file_flag,
            code=code("mirage.samples.cli", "mirage.twin.cli"),
        shell:
            "python -m mirage samples twin --policy {wildcards.replayed}"
            " --cluster {wildcards.cluster} --mode {wildcards.mode} {params.cluster_file}"
            " --trace-dir {params.trace} --samples {params.samples}"
            " --chain-nodes {wildcards.nodes} --seed {params.seed}"
            " --params '{params.params}' --c-I {params.c_I} --c-O {params.c_O}"
            " --out {output.models} > {log} 2>&1"


rule evaluate:
    input:
        samples=expand(
            f"{R}/{{{{cluster}}}}/{{mode}}/samples/summary.json",
            mode=MODES,
        ),
        models=expand(
            f"{R}/{{{{cluster}}}}/{{mode}}/models/n{{nodes}}/{{policy}}",
            mode=MODES,
            nodes=CHAIN_NODES,
            policy=MODELS,
        ),
    output:
        table=report(
            f"{R}/{{cluster}}/evaluation.csv",
            caption="../report/evaluation_table.rst",
            category="Tables",
            subcategory="{cluster}",
            labels={"table": "evaluation", "cluster": "{cluster}"},
        ),
        markdown=f"{R}/{{cluster}}/evaluation.md",
        outcomes=f"{R}/{{cluster}}/outcomes.parquet",
        fits=report(
            f"{R}/{{cluster}}/fits.csv",
            caption="../report/fits_table.rst",
            category="Tables",
            subcategory="{cluster}",
            labels={"table": "fits", "cluster": "{cluster}"},
        ),
        lead_sweep=f"{R}/{{cluster}}/lead_sweep.csv",
        seeds=report(
            f"{R}/{{cluster}}/seeds.csv",
            caption="../report/seeds_table.rst",
            category="Tables",
            subcategory="{cluster}",
            labels={"table": "training seeds", "cluster": "{cluster}"},
        ),
    log:
        f"{LOGS}/{{cluster}}/evaluate.log",
    benchmark:
        f"{BENCH}/{{cluster}}/evaluate.tsv"
    conda:
        "../envs/learn.yaml"
    params:
        runs=lambda w: " ".join(
            f"--run {m} {R}/{w.cluster}/{m}/samples {R}/{w.cluster}/{m}/models"
            for m in MODES
        ),
        policies=" ".join(POLICIES),
        label=lambda w: cluster_cfg(w)["label"],
        seeds=TRAINING_SEEDS,
        c_I=config["policies"]["costs"]["interruption"],
        c_O=config["policies"]["costs"]["overlap"],
        out=lambda w, output: str(Path(output.table).parent),
        code=code("mirage.evaluate.cli"),
    shell:
        "python -m mirage evaluate {params.runs} --policies {params.policies}"
        " --label '{params.label}' --training-seeds {params.seeds} --c-I {params.c_I} --c-O {params.c_O} --out-dir {params.out} > {log} 2>&1"


rule evaluation:
    input:
        expand(f"{R}/{{cluster}}/evaluation.csv", cluster=CLUSTERS),
