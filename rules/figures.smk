# Stage 5: the figures, drawn from the tables the other stages wrote (a figure is redrawn without
# re-running what it shows). One directory per cluster and kind; each figure as PNG and PDF.


rule figures_trace:
    input:
        clean=f"{R}/{{cluster}}/trace/clean.parquet",
    output:
        figures=report(
            directory(f"{R}/{{cluster}}/figures/trace"),
            patterns=["{name}.png"],
            caption="../report/figures_trace.rst",
            category="Traces",
            subcategory="{cluster}",
            labels={"cluster": "{cluster}", "figure": "{name}"},
        ),
    log:
        f"{LOGS}/{{cluster}}/figures_trace.log",
    benchmark:
        f"{BENCH}/{{cluster}}/figures_trace.tsv"
    conda:
        "../envs/report.yaml"
    params:
        label=lambda w: cluster_cfg(w)["label"],
        code=code("mirage.figures.cli"),
    shell:
        "python -m mirage figures trace --clean {input.clean} --label '{params.label}'"
        " --out-dir {output.figures} > {log} 2>&1"


rule figures_fidelity:
    input:
        report=f"{R}/{{cluster}}/sim/fidelity.json",
        points=f"{R}/{{cluster}}/sim/fidelity_points.parquet",
    output:
        figures=report(
            directory(f"{R}/{{cluster}}/figures/fidelity"),
            patterns=["{name}.png"],
            caption="../report/figures_fidelity.rst",
            category="Simulator fidelity",
            subcategory="{cluster}",
            labels={"cluster": "{cluster}", "figure": "{name}"},
        ),
    log:
        f"{LOGS}/{{cluster}}/figures_fidelity.log",
    benchmark:
        f"{BENCH}/{{cluster}}/figures_fidelity.tsv"
    conda:
        "../envs/report.yaml"
    params:
        label=lambda w: cluster_cfg(w)["label"],
        code=code("mirage.figures.cli"),
    shell:
        "python -m mirage figures fidelity --report {input.report} --points {input.points}"
        " --label '{params.label}' --out-dir {output.figures} > {log} 2>&1"


rule figures_evaluation:
    input:
        outcomes=f"{R}/{{cluster}}/outcomes.parquet",
        evaluation=f"{R}/{{cluster}}/evaluation.csv",
        lead_sweep=f"{R}/{{cluster}}/lead_sweep.csv",
        seeds=f"{R}/{{cluster}}/seeds.csv",
    output:
        figures=report(
            directory(f"{R}/{{cluster}}/figures/evaluation"),
            patterns=["{name}.png"],
            caption="../report/figures_evaluation.rst",
            category="Policies",
            subcategory="{cluster}",
            labels={"cluster": "{cluster}", "figure": "{name}"},
        ),
    log:
        f"{LOGS}/{{cluster}}/figures_evaluation.log",
    benchmark:
        f"{BENCH}/{{cluster}}/figures_evaluation.tsv"
    conda:
        "../envs/report.yaml"
    params:
        label=lambda w: cluster_cfg(w)["label"],
        code=code("mirage.figures.cli"),
    shell:
        "python -m mirage figures evaluation --outcomes {input.outcomes}"
        " --evaluation {input.evaluation} --lead-sweep {input.lead_sweep} --seeds {input.seeds}"
        " --label '{params.label}' --out-dir {output.figures} > {log} 2>&1"


rule figures_training:
    input:
        models=expand(
            f"{R}/{{{{cluster}}}}/{{mode}}/models/n{{nodes}}/{{policy}}",
            mode=MODES,
            nodes=CHAIN_NODES,
            policy=POLICIES,
        ),
    output:
        figures=report(
            directory(f"{R}/{{cluster}}/figures/training"),
            patterns=["{name}.png"],
            caption="../report/figures_training.rst",
            category="Training",
            subcategory="{cluster}",
            labels={"cluster": "{cluster}", "figure": "{name}"},
        ),
    log:
        f"{LOGS}/{{cluster}}/figures_training.log",
    benchmark:
        f"{BENCH}/{{cluster}}/figures_training.tsv"
    conda:
        "../envs/report.yaml"
    params:
        label=lambda w: cluster_cfg(w)["label"],
        models=lambda w: " ".join(
            f"--models {m} {R}/{w.cluster}/{m}/models" for m in MODES
        ),
        code=code("mirage.figures.cli"),
    shell:
        "python -m mirage figures training {params.models} --label '{params.label}'"
        " --out-dir {output.figures} > {log} 2>&1"


rule figures:
    input:
        expand(
            f"{R}/{{cluster}}/figures/{{kind}}",
            cluster=CLUSTERS,
            kind=["trace", "fidelity", "evaluation", "training"],
        ),
