# Stage 6: what a person reads: the run's markdown report, the executed notebooks, and the
# workflow's verdict on the paper's claims and on the run's expected values.


#: the reference values of this run, where the project has them (mirage expected regenerate)
EXPECTED = str(Path(workflow.basedir) / "results" / "expected" / f"{RUN}.csv")


localrules:
    run_config,


#: the run's tables that the report and the notebooks read: per cluster its evaluation,
#: outcomes, simulator fidelity and trace summary, and per cluster and mode its samples' summary
RUN_TABLES = {
    "evaluations": expand(f"{R}/{{cluster}}/evaluation.csv", cluster=CLUSTERS),
    "outcomes": expand(f"{R}/{{cluster}}/outcomes.parquet", cluster=CLUSTERS),
    "fidelity": expand(f"{R}/{{cluster}}/sim/fidelity.json", cluster=CLUSTERS),
    "summaries": expand(f"{R}/{{cluster}}/trace/summary.json", cluster=CLUSTERS),
    "samples": expand(
        f"{R}/{{cluster}}/{{mode}}/samples/summary.json", cluster=CLUSTERS, mode=MODES
    ),
}


rule run_config:
    output:
        config=run_document("config.yaml", "config", "Configuration"),
    log:
        f"{LOGS}/run_config.log",
    conda:
        "../envs/report.yaml"
    params:
        config=json.dumps({**config, "run": RUN}),
        sources=" ".join(map(str, workflow.configfiles)),
    shell:
        "python -m mirage config write --json {params.config:q} --source {params.sources}"
        " --out {output.config} > {log} 2>&1"


rule report:
    input:
        **RUN_TABLES,
        # read by the report beside the tables: the cleaning counts
        cleaning=expand(f"{R}/{{cluster}}/trace/clean_report.json", cluster=CLUSTERS),
    output:
        markdown=run_document("report.md", "report_md", "Run report"),
    log:
        f"{LOGS}/report.log",
    benchmark:
        f"{BENCH}/report.tsv"
    conda:
        "../envs/report.yaml"
    params:
        **RUN_PARAMS,
        clusters=" ".join(CLUSTERS),
        verdicts=VERDICT_FLAGS,
        code=code("mirage.report"),
    shell:
        "python -m mirage report --results {params.results} --clusters {params.clusters}"
        " --labels '{params.labels}' --seed {params.seed}"
        " {params.verdicts} --out {output.markdown}"
        " > {log} 2>&1"


rule notebook:
    input:
        # what the notebooks read, so that a change of any reruns them
        **RUN_TABLES,
        fits=expand(f"{R}/{{cluster}}/fits.csv", cluster=CLUSTERS),
        clean=expand(f"{R}/{{cluster}}/trace/clean.parquet", cluster=CLUSTERS),
        quarantine=expand(f"{R}/{{cluster}}/trace/quarantine.csv", cluster=CLUSTERS),
    output:
        notebook=f"{R}/notebooks/{{notebook}}.ipynb",
        html=report(
            f"{R}/notebooks/{{notebook}}.html",
            caption="../report/notebook.rst",
            category="Notebooks",
            labels={"notebook": "{notebook}"},
        ),
    log:
        f"{LOGS}/notebook_{{notebook}}.log",
    benchmark:
        f"{BENCH}/notebook_{{notebook}}.tsv"
    wildcard_constraints:
        notebook="|".join(NOTEBOOK_NAMES),
    conda:
        "../envs/report.yaml"
    params:
        **RUN_PARAMS,
        clusters=",".join(CLUSTERS),
        equivalence_h=config["evaluation"]["equivalence_h"],
        block_hours=config["evaluation"]["block_hours"],
        every_hours=config["samples"]["every_hours"],
        notebook=lambda w: str(NOTEBOOKS / f"{w.notebook}.ipynb"),
        # the notebook's content and the code it runs, not its path: a copy of the workflow
        # elsewhere does not rerun it, an edit does
        code=lambda w: fingerprint(
            "mirage.notebooks",
            "mirage.report",
            files=[NOTEBOOKS / f"{w.notebook}.ipynb"],
        ),
    shell:
        "python -m mirage notebook run {params.notebook} --out {output.notebook}"
        " --html {output.html} -p results {params.results} -p clusters {params.clusters}"
        " -p labels '{params.labels}' -p seed {params.seed}"
        " -p equivalence_h {params.equivalence_h} -p block_hours {params.block_hours}"
        " -p every_hours {params.every_hours} > {log} 2>&1"


rule notebooks:
    input:
        expand(f"{R}/notebooks/{{notebook}}.html", notebook=NOTEBOOK_NAMES),


rule check_claims:
    input:
        evaluations=expand(f"{R}/{{cluster}}/evaluation.csv", cluster=CLUSTERS),
        outcomes=expand(f"{R}/{{cluster}}/outcomes.parquet", cluster=CLUSTERS),
        # an input where the run has one, so that a regenerated reference reruns the check
        expected=lambda w: [EXPECTED] if Path(EXPECTED).exists() else [],
    output:
        claims=run_document("claims.md", "claims", "Claims"),
        table=f"{R}/claims.csv",
        learning=f"{R}/learning.csv",
    log:
        f"{LOGS}/check_claims.log",
    benchmark:
        f"{BENCH}/check_claims.tsv"
    conda:
        "../envs/report.yaml"
    params:
        run=RUN,
        traces=json.dumps({c: trace_kind(c) for c in CLUSTERS}),
        seed=config["seed"],
        verdicts=VERDICT_FLAGS,
        expected=EXPECTED,
        code=code("mirage.evaluate.claims"),
    shell:
        # the verdict on the console as well as in the log: a failure shows what is off
        "python -m mirage claims {input.evaluations} --outcomes {input.outcomes}"
        " --run {params.run} --traces '{params.traces}' --seed {params.seed}"
        " {params.verdicts}"
        " --expected {params.expected} --out {output.claims} --table {output.table}"
        " --learning {output.learning}"
        " 2>&1 | tee {log}"
