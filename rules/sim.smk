# The simulator's fidelity on each cluster's own trace: leave-one-out what-ifs of long jobs and a
# full replay, against the zero-wait predictor and the reference's compatibility setting.


rule sim_fidelity:
    input:
        clean=f"{R}/{{cluster}}/trace/clean.parquet",
    output:
        report=f"{R}/{{cluster}}/sim/fidelity.json",
        points=f"{R}/{{cluster}}/sim/fidelity_points.parquet",
    log:
        f"{LOGS}/{{cluster}}/sim_fidelity.log",
    benchmark:
        f"{BENCH}/{{cluster}}/sim_fidelity.tsv"
    conda:
        "../envs/sim.yaml"
    params:
        windows=lambda w: ",".join(
            cluster_cfg(w)["windows"][split]["start"] for split in SPLITS
        ),
        code=sim_code,
    shell:
        "python -m mirage sim fidelity {input.clean} --cluster {wildcards.cluster}"
        " --windows {params.windows} --window-days 5 --out {output.report}"
        " --points {output.points} > {log} 2>&1"


rule fidelity:
    input:
        expand(f"{R}/{{cluster}}/sim/fidelity.json", cluster=CLUSTERS),
