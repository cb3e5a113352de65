# Stage 4: one report of the run: markdown (tables, goal checks) and an executed notebook.


rule report:
    input:
        evaluations=expand("results/{cluster}/evaluation.csv", cluster=CLUSTERS),
        outcomes=expand("results/{cluster}/outcomes.parquet", cluster=CLUSTERS),
        fidelity=expand("results/{cluster}/sim/fidelity.json", cluster=CLUSTERS),
        profiles=expand("results/{cluster}/figures/trace_profile.png", cluster=CLUSTERS),
        notebook=REPORT_NOTEBOOK,
    output:
        markdown="results/report.md",
        notebook="results/report.ipynb",
    log:
        "logs/report.log",
    benchmark:
        "benchmarks/report.tsv"
    conda:
        "../envs/report.yaml"
    params:
        clusters=" ".join(CLUSTERS),
        clusters_csv=",".join(CLUSTERS),
        labels=json.dumps({c: config["clusters"][c]["label"] for c in CLUSTERS}),
        seed=config["seed"],
    shell:
        "(python -m mirage report --results results --clusters {params.clusters}"
        " --labels '{params.labels}' --seed {params.seed} --out {output.markdown}"
        " && python -m papermill {input.notebook} {output.notebook} --cwd ."
        " -p results results -p clusters {params.clusters_csv} -p seed {params.seed})"
        " > {log} 2>&1"
