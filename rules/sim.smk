# The simulator's cluster description fitted from a cluster's training window, where the config
# asks for it (description: fitted, or auto without config/clusters/<cluster>.yaml); and the
# simulator's fidelity on each cluster's own trace: leave-one-out what-ifs of long jobs and a
# full replay, against the zero-wait predictor and the reference's compatibility setting.


rule calibrate_cluster:
    input:
        clean=f"{R}/{{cluster}}/trace/clean.parquet",
    output:
        description=f"{R}/{{cluster}}/sim/fitted_cluster.yaml",
        report=report(
            f"{R}/{{cluster}}/sim/calibration.json",
            caption="../report/calibration.rst",
            category="Simulator fidelity",
            subcategory="{cluster}",
        ),
    log:
        f"{LOGS}/{{cluster}}/calibrate_cluster.log",
    benchmark:
        f"{BENCH}/{{cluster}}/calibrate_cluster.tsv"
    conda:
        "../envs/sim.yaml"
    params:
        windows=lambda w: cluster_cfg(w)["windows"],
        seed=config["seed"],
        # a hand-written description, where there is one, is measured beside the fitted one
        compare=lambda w: "--compare-hand" if hand_written(w.cluster) else "",
        code=sim_code,
    shell:
        "python -m mirage sim calibrate {input.clean} --cluster {wildcards.cluster} {params.compare}"
        " --train-window {params.windows[train][start]} {params.windows[train][end]}"
        " --validation-window {params.windows[validation][start]}"
        " {params.windows[validation][end]} --seed {params.seed}"
        " --out {output.description} --report {output.report} > {log} 2>&1"


rule sim_fidelity:
    input:
        clean=f"{R}/{{cluster}}/trace/clean.parquet",
        description=description,
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
        cluster_file=cluster_file_flag,
        loo_jobs=lambda w: (
            f"--loo-jobs {config['fidelity']['loo_jobs']} --seed {config['seed']}"
            if config.get("fidelity", {}).get("loo_jobs")
            else ""
        ),
        code=sim_code,
    shell:
        "python -m mirage sim fidelity {input.clean} --cluster {wildcards.cluster}"
        " {params.cluster_file} --windows {params.windows} --window-days 5 {params.loo_jobs}"
        " --out {output.report} --points {output.points} > {log} 2>&1"


rule fidelity:
    input:
        expand(f"{R}/{{cluster}}/sim/fidelity.json", cluster=CLUSTERS),
