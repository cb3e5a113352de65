# Stage 5: the figures, drawn from the tables the other stages wrote (a figure is redrawn without
# re-running what it shows). One directory per cluster and kind; each figure as PNG and PDF.


#: per kind of figure: its report category, the tables it draws and how the command reads them
FIGURES = {
    "trace": (
        "Traces",
        {"clean": f"{R}/{{cluster}}/trace/clean.parquet"},
        input_flags,
    ),
    "fidelity": (
        "Simulator fidelity",
        {
            "report": f"{R}/{{cluster}}/sim/fidelity.json",
            "points": f"{R}/{{cluster}}/sim/fidelity_points.parquet",
        },
        input_flags,
    ),
    "evaluation": (
        "Policies",
        {
            "outcomes": f"{R}/{{cluster}}/outcomes.parquet",
            "evaluation": f"{R}/{{cluster}}/evaluation.csv",
            "lead_sweep": f"{R}/{{cluster}}/lead_sweep.csv",
            "seeds": f"{R}/{{cluster}}/seeds.csv",
        },
        evaluation_flags,
    ),
    "training": (
        "Training",
        {
            "models": expand(
                f"{R}/{{{{cluster}}}}/{{mode}}/models/n{{nodes}}/{{policy}}",
                mode=MODES,
                nodes=CHAIN_NODES,
                policy=POLICIES,
            )
        },
        training_flags,
    ),
}
if CURVE_POLICIES:
    FIGURES["curves"] = (
        "Training",
        {"curves": [d for _, d in curve_dirs()]},
        curves_flags,
    )


for kind, (category, tables, flags) in FIGURES.items():

    rule:
        name:
            f"figures_{kind}"
        input:
            **tables,
        output:
            figures=report(
                directory(f"{R}/{{cluster}}/figures/{kind}"),
                patterns=["{name}.png"],
                caption=f"../report/figures_{kind}.rst",
                category=category,
                subcategory="{cluster}",
                labels={"cluster": "{cluster}", "figure": "{name}"},
            ),
        log:
            f"{LOGS}/{{cluster}}/figures_{kind}.log",
        benchmark:
            f"{BENCH}/{{cluster}}/figures_{kind}.tsv"
        conda:
            "../envs/report.yaml"
        params:
            kind=kind,
            flags=flags,
            label=lambda w: cluster_cfg(w)["label"],
            code=code("mirage.figures.cli"),
        shell:
            "python -m mirage figures {params.kind} {params.flags} --label '{params.label}'"
            " --out-dir {output.figures} > {log} 2>&1"


rule figures:
    input:
        expand(
            f"{R}/{{cluster}}/figures/{{kind}}",
            cluster=CLUSTERS,
            kind=list(FIGURES),
        ),
