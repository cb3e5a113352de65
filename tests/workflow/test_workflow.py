"""The Snakemake workflow: lint, formatting, dry runs of every shipped config, and a real run
of the whole DAG on the tiny config."""

import html as html_lib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from paths import REPO
from runs import TINY, snakemake


def test_lint_clean():
    res = snakemake("--lint")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Congratulations, your workflow is in a good condition!" in res.stdout + res.stderr


def test_snakefmt_clean():
    snakefmt = Path(sys.executable).with_name("snakefmt")
    res = subprocess.run([str(snakefmt), "--check", "Snakefile", "rules"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("configfile", [None, "config/paper.yaml", "config/tiny.yaml",
                                        "config/ls6-real.yaml", "config/ls6-feb.yaml",
                                        "config/ls6-seeds.yaml", "config/ls6-history.yaml",
                                        # the overlays of ls6-real's run
                                        "config/ls6-real.yaml config/ls6-curves.yaml",
                                        "config/ls6-real.yaml config/ls6-rolling.yaml"])
def test_dry_run(configfile):
    args = ["-n", "--quiet", "rules"] + (["--configfile", *configfile.split()] if configfile
                                         else [])
    res = snakemake(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    text = res.stdout + res.stderr
    if configfile is None:
        for cluster in ("frontera", "longhorn", "ls6"):
            assert f"results/default/{cluster}" in snakemake("-n", "--forceall").stdout
    if configfile == "config/paper.yaml":
        assert "fetch_trace" in text and "synth_trace" not in text


def test_bad_config_names_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((REPO / "config" / "tiny.yaml").read_text().replace("source: synthetic", "source: nowhere"))
    res = snakemake("-n", "--configfile", str(bad))
    assert res.returncode != 0
    assert "clusters.ls6.source" in res.stdout + res.stderr


@pytest.mark.slow
def test_tiny_config_runs_the_whole_dag(tiny_run, tmp_path):
    a = tiny_run
    trace = a / "results" / "tiny" / "ls6" / "trace"
    report = json.loads((trace / "clean_report.json").read_text())
    assert report["rows_in"] == report["rows_kept"] + sum(report["quarantined"].values())
    assert report["rows_kept"] > 500
    train = pd.read_parquet(trace / "train.parquet")
    val = pd.read_parquet(trace / "validation.parquet")
    assert train["in_window"].sum() > 0 and val["in_window"].sum() > 0
    assert train.loc[train["in_window"], "submit"].max() < val.loc[val["in_window"], "submit"].min()
    for rule in ("synth_trace", "clean_trace", "split_trace"):
        assert (a / "logs" / "tiny" / "ls6" / f"{rule}.log").exists()
        assert (a / "benchmarks" / "tiny" / "ls6" / f"{rule}.tsv").exists()
    # deterministic: a second run from nothing, by the command that writes the reference values,
    # gives identical tables, and reference values that the committed ones accept
    regenerated = tmp_path / "tiny.csv"
    res = subprocess.run([sys.executable, "-m", "mirage", "expected", "regenerate", str(TINY),
                          "--keep", str(tmp_path / "b"), "--out", str(regenerated)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    mine = pd.read_csv(regenerated)
    committed = pd.read_csv(REPO / "results" / "expected" / "tiny.csv")
    assert len(mine) == len(committed)
    assert ((mine["expected"] - committed["expected"]).abs() <= committed["tolerance"]).all()
    for name in ("trace/clean.parquet", "trace/train.parquet", "trace/validation.parquet",
                 "calibrated/samples/samples.parquet", "calibrated/samples/points.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(a / "results" / "tiny" / "ls6" / name),
            pd.read_parquet(tmp_path / "b" / "results" / "tiny" / "ls6" / name),
        )
    # every policy fitted and evaluated; the same tables from the second run (all seeded)
    pd.testing.assert_frame_equal(pd.read_csv(a / "results" / "tiny" / "ls6" / "evaluation.csv"),
                                  pd.read_csv(tmp_path / "b" / "results" / "tiny" / "ls6" / "evaluation.csv"))
    evaluation = pd.read_csv(a / "results" / "tiny" / "ls6" / "evaluation.csv")
    assert set(evaluation["policy"]) == {
        "reactive", "average", "fixed_lead", "plan_lead", "quantile", "service_level", "rf",
        "rf_tuned", "xgb", "xgb_tuned", "dqn", "dqn_tuned", "pg", "pg_tuned", "transformer", "moe",
        "oracle", "twin", "twin_tuned"}
    assert {"cluster", "mode", "chain_nodes", "load_level", "policy", "n", "mean_interruption_h",
            "median_interruption_h", "mean_overlap_h", "overlap_node_hours", "zero_interruption_share",
            "interruption_reduction_pct", "cost", "oracle_gap"} <= set(evaluation.columns)
    overall = evaluation[evaluation["load_level"] == "all"].set_index(["chain_nodes", "policy"])["cost"]
    for nodes in (1, 8):
        assert overall[(nodes, "oracle")] <= overall.xs(nodes).min() + 1e-12
    # the committed reference figures of this config (results/expected/tiny.csv), within tolerance
    check = subprocess.run([sys.executable, "-m", "mirage", "expected", "check",
                            str(a / "results" / "tiny" / "ls6" / "evaluation.csv"),
                            "--expected", str(REPO / "results" / "expected" / "tiny.csv")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    run = a / "results" / "tiny"
    for kind in ("trace", "fidelity", "evaluation", "training", "curves"):
        pngs = {p.stem for p in (run / "ls6" / "figures" / kind).glob("*.png")}
        pdfs = {p.stem for p in (run / "ls6" / "figures" / kind).glob("*.pdf")}
        assert pngs and pngs == pdfs, kind
    curves = pd.read_csv(run / "ls6" / "calibrated" / "curves" / "n1" / "pg" / "curves.csv")
    assert set(curves["seed"]) == {7, 8}
    assert all(g["env_steps"].is_monotonic_increasing for _, g in curves.groupby("seed"))
    report = (run / "report.md").read_text()
    assert "## Goals" in report and "rows in" in report and "evaluation.md" in report
    for name in ("report", "traces", "models", "provisioning"):
        notebook = json.loads((run / "notebooks" / f"{name}.ipynb").read_text())
        assert not [o for c in notebook["cells"] for o in c.get("outputs", [])
                    if o.get("output_type") == "error"], name
        assert (run / "notebooks" / f"{name}.html").stat().st_size > 10_000, name
    claims = (run / "claims.md").read_text()
    assert "## The paper's headline claims" in claims and "within tolerance" in claims
    assert set(pd.read_csv(run / "claims.csv")["verdict"]) <= {
        "reproduced", "not reproduced", "within noise", "too few samples", "not applicable"}
    assert "## Does learning pay?" in claims
    samples = pd.read_parquet(a / "results" / "tiny" / "ls6" / "calibrated" / "samples" / "samples.parquet")
    assert set(samples["split"]) == {"train", "validation"} and set(samples["chain_nodes"]) == {1, 8}


@pytest.mark.slow
def test_real_trace_config_runs(tmp_path):
    """The real-trace config as it ships: the bundled trace, read from the checkout."""
    work = tmp_path / "w"
    work.mkdir()
    shutil.copy(REPO / "config" / "ls6-real.yaml", work / "ls6-real.yaml")  # the run's name
    # the trace stage only: the samples of the real trace are a benchmark, not a test
    res = snakemake("traces", "-s", str(REPO / "Snakefile"), "-d", str(work), "--cores", "2",
                    "--configfile", str(work / "ls6-real.yaml"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = json.loads((work / "results" / "ls6-real" / "ls6" / "trace" / "clean_report.json").read_text())
    assert (report["rows_in"], report["rows_kept"]) == (24777, 24776)
    shutil.rmtree(work / ".snakemake", ignore_errors=True)


def test_notebook_rule_passes_all_clusters_to_papermill():
    # papermill takes one value per parameter: several clusters must arrive comma-separated
    res = snakemake("-n", "-p", "--forceall", "results/default/notebooks/report.html")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "-p results results/default -p clusters frontera,longhorn,ls6" in res.stdout


def test_torch_fits_ask_for_a_gpu_only_when_the_config_trains_on_cuda(tmp_path):
    # the Slurm plugin turns the `gpu` resource into --gpus=N (profiles/slurm); the torch
    # policies of a cluster, mode and chain size are fitted in two jobs, with their twins: the
    # compact nets on one thread (fit_torch), the history models on two (fit_history)
    groups = {"fit_torch": ({"dqn", "dqn_tuned", "pg", "pg_tuned"}, "1"),  # the tiny config's
              "fit_history": ({"transformer", "moe"}, "2")}
    # GPU jobs on cuda: one per fit group and chain size (1 and 8 nodes), and one per learning
    # curve (the tiny config's dqn and pg at 1 node)
    for device, gpu_jobs in (("cpu", 0), ("cuda", 6), ("cuda:1", 6)):
        cfg = tmp_path / f"{device}.yaml"
        tiny = yaml.safe_load(TINY.read_text())
        tiny["policies"]["device"] = device
        cfg.write_text(yaml.safe_dump(tiny))
        res = snakemake("-n", "-p", "--forceall", "--cores", "2", "-d", str(tmp_path / "w"),
                        "--configfile", str(cfg))
        assert res.returncode == 0, res.stdout + res.stderr
        jobs = re.split(r"\n(?=(?:local)?rule \w+:)", res.stdout)
        gpu = [job for job in jobs if "gpu=1" in job]
        assert len(gpu) == gpu_jobs, device
        curves = [job for job in jobs if re.match(r"(?:local)?rule learning_curve:", job)]
        assert len(curves) == 2 and all(("gpu=1" in j) == device.startswith("cuda")
                                        for j in curves), device
        seen = {}
        for job in jobs:
            rule = re.match(r"(?:local)?rule (\w+):", job)
            if not rule or rule.group(1) not in groups:
                continue
            fitted = {line.rsplit("/", 1)[1].rstrip(",") for line in job.split("output:")[1]
                      .split("\n")[0].split(", ")}
            members, threads = groups[rule.group(1)]
            assert fitted == members, device
            assert f"--threads {threads} " in job, device
            assert ("gpu=1" in job) == device.startswith("cuda"), device
            seen[rule.group(1)] = seen.get(rule.group(1), 0) + 1
        assert seen == {"fit_torch": 2, "fit_history": 2}, device
        for job in jobs:
            if "rule fit_policies:" in job:
                assert "gpu=" not in job and "dqn" not in job.split("output:")[1].split("\n")[0]


@pytest.mark.slow
def test_snakemake_report_holds_every_figure_and_table(tiny_run, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(tiny_run, work, symlinks=True)
    html = work / "report.html"
    res = snakemake("-s", str(REPO / "Snakefile"), "-d", str(work), "--configfile", str(TINY),
                    "--report", str(html))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    text = html_lib.unescape(html.read_text())
    run = work / "results" / "tiny"
    figures = sorted(p.name for p in run.glob("ls6/figures/*/*.png"))
    assert len(figures) >= 15
    missing = [name for name in figures if name not in text]
    assert not missing, missing
    for name in ("evaluation.csv", "fits.csv", "claims.md", "report.md", "config.yaml",
                 "traces.html", "models.html", "provisioning.html"):
        assert name in text, name
    # every caption is rendered (their opening words), and the categories exist; the
    # calibration's only where a cluster's description is fitted, which the tiny config's is not
    # (its rule runs in test_a_cluster_without_a_hand_written_description_is_calibrated_first),
    # the rolling-origin table's only with clusters.<c>.rolling (tests/evaluate/test_rolling.py)
    for caption in sorted((REPO / "report").glob("*.rst")):
        if caption.name in ("calibration.rst", "rolling_table.rst"):
            continue
        plain = re.sub(r"\{\{.*?\}\}", " ", caption.read_text())  # the templated parts
        words = [w for w in re.split(r"[^A-Za-z]+", plain) if len(w) > 3][:4]
        assert re.search(r"[\s\S]{1,80}?".join(words), text), caption.name
    for category in ("Claims", "Policies", "Traces", "Simulator fidelity", "Training",
                     "Notebooks", "Tables", "Configuration"):
        assert category in text, category


def test_a_cluster_without_a_hand_written_description_is_calibrated_first(tmp_path):
    # 'auto' (the default) fits a description for a cluster config/clusters does not know, and
    # the calibrated mode's samples and the fidelity read it; the compat mode's do not
    cfg = yaml.safe_load(TINY.read_text())
    cfg["samples"]["sim_modes"] = ["calibrated", "compat"]
    cfg["clusters"]["ls6"]["description"] = "fitted"
    path = tmp_path / "fitted.yaml"
    path.write_text(yaml.safe_dump(cfg))
    work = tmp_path / "w"
    dry = snakemake("-n", "-p", "-s", str(REPO / "Snakefile"), "-d", str(work),
                    "--configfile", str(path))
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    fitted = "results/fitted/ls6/sim/fitted_cluster.yaml"
    shards = [line for line in dry.stdout.splitlines() if "mirage samples shard" in line]
    assert shards and all((f"--cluster-file {fitted}" in s) == ("--mode calibrated" in s) for s in shards)
    assert any("mirage sim fidelity" in line and f"--cluster-file {fitted}" in line
               for line in dry.stdout.splitlines())
    # the rule itself, for real, on the tiny trace: a description every simulator reads
    res = snakemake("-s", str(REPO / "Snakefile"), "-d", str(work), "--cores", "2",
                    "--configfile", str(path), "--until", "calibrate_cluster")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    from mirage.sim import load_cluster

    d = load_cluster("ls6", work / fitted)
    assert d.max_jobs_per_user is not None and "fitted on" in d.sources["backfill.mode"]
    report = json.loads((work / "results/fitted/ls6/sim/calibration.json").read_text())
    assert set(report["validation"]["predictors"]) == {"fitted", "hand", "compat", "zero_wait"}
    # a hand-written description ('file', or 'auto' where one exists) keeps the DAG as it was
    cfg["clusters"]["ls6"]["description"] = "auto"
    path.write_text(yaml.safe_dump(cfg))
    dry = snakemake("-n", "-p", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path / "w2"),
                    "--configfile", str(path))
    assert dry.returncode == 0 and "calibrate_cluster" not in dry.stdout
