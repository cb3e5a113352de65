# The simulator's fidelity on each cluster's own trace: leave-one-out what-ifs of long jobs and a
# full replay, against the zero-wait predictor and the reference's compatibility setting.


rule sim_fidelity:
    input:
        clean="results/{cluster}/trace/clean.parquet",
    output:
        report="results/{cluster}/sim/fidelity.json",
        figure="results/{cluster}/sim/fidelity.png",
    log:
        "logs/{cluster}/sim_fidelity.log",
    benchmark:
        "benchmarks/{cluster}/sim_fidelity.tsv"
    conda:
        "../envs/sim.yaml"
    params:
        windows=lambda w: ",".join(
            cluster_cfg(w)["windows"][split]["start"] for split in SPLITS
        ),
    shell:
        "python -m mirage sim fidelity {input.clean} --cluster {wildcards.cluster}"
        " --windows {params.windows} --window-days 5 --out {output.report} > {log} 2>&1"


rule fidelity:
    input:
        expand("results/{cluster}/sim/fidelity.json", cluster=CLUSTERS),
