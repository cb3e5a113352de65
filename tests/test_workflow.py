"""The Snakemake workflow: lint, formatting, dry runs of every shipped config, and a real run
of the whole DAG on the tiny config."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from paths import LS6, REPO
from runs import run_tiny, snakemake


def test_lint_clean():
    res = snakemake("--lint")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Congratulations, your workflow is in a good condition!" in res.stdout + res.stderr


def test_snakefmt_clean():
    snakefmt = Path(sys.executable).with_name("snakefmt")
    res = subprocess.run([str(snakefmt), "--check", "Snakefile", "rules"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("configfile", [None, "config/paper.yaml", "config/tiny.yaml",
                                        "config/ls6-real.yaml", "config/ls6-feb.yaml"])
def test_dry_run(configfile):
    args = ["-n", "--quiet", "rules"] + (["--configfile", configfile] if configfile else [])
    res = snakemake(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    text = res.stdout + res.stderr
    if configfile is None:
        for cluster in ("frontera", "longhorn", "ls6"):
            assert f"results/{cluster}" in snakemake("-n", "--forceall").stdout
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
    trace = a / "results" / "ls6" / "trace"
    report = json.loads((trace / "clean_report.json").read_text())
    assert report["rows_in"] == report["rows_kept"] + sum(report["quarantined"].values())
    assert report["rows_kept"] > 500
    train = pd.read_parquet(trace / "train.parquet")
    val = pd.read_parquet(trace / "validation.parquet")
    assert train["in_window"].sum() > 0 and val["in_window"].sum() > 0
    assert train.loc[train["in_window"], "submit"].max() < val.loc[val["in_window"], "submit"].min()
    for rule in ("synth_trace", "clean_trace", "split_trace"):
        assert (a / "logs" / "ls6" / f"{rule}.log").exists()
        assert (a / "benchmarks" / "ls6" / f"{rule}.tsv").exists()
    # deterministic: a second run from scratch gives identical tables
    run_tiny(tmp_path / "b")
    for name in ("trace/clean.parquet", "trace/train.parquet", "trace/validation.parquet",
                 "calibrated/samples/samples.parquet", "calibrated/samples/points.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(a / "results" / "ls6" / name),
            pd.read_parquet(tmp_path / "b" / "results" / "ls6" / name),
        )
    # every policy fitted and evaluated; the same tables from the second run (all seeded)
    pd.testing.assert_frame_equal(pd.read_csv(a / "results" / "ls6" / "evaluation.csv"),
                                  pd.read_csv(tmp_path / "b" / "results" / "ls6" / "evaluation.csv"))
    evaluation = pd.read_csv(a / "results" / "ls6" / "evaluation.csv")
    assert set(evaluation["policy"]) == {
        "reactive", "average", "fixed_lead", "plan_lead", "quantile", "service_level", "rf",
        "rf_tuned", "xgb", "xgb_tuned", "dqn", "dqn_tuned", "pg", "pg_tuned", "oracle"}
    assert {"cluster", "mode", "chain_nodes", "load_level", "policy", "n", "mean_interruption_h",
            "median_interruption_h", "mean_overlap_h", "overlap_node_hours", "zero_interruption_share",
            "interruption_reduction_pct", "cost", "oracle_gap"} <= set(evaluation.columns)
    overall = evaluation[evaluation["load_level"] == "all"].set_index(["chain_nodes", "policy"])["cost"]
    for nodes in (1, 8):
        assert overall[(nodes, "oracle")] <= overall.xs(nodes).min() + 1e-12
    # the committed reference figures of this config (results/expected/tiny.csv), within tolerance
    check = subprocess.run([sys.executable, "-m", "mirage", "expected", "check",
                            str(a / "results" / "ls6" / "evaluation.csv"),
                            "--expected", str(REPO / "results" / "expected" / "tiny.csv")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    figures = a / "results" / "ls6" / "figures" / "evaluation"
    assert {"x_ls6_calibrated_n1.png", "x_ls6_calibrated_n8.png"} <= {p.name for p in figures.iterdir()}
    report = (a / "results" / "report.md").read_text()
    assert "## Goals" in report and "rows in" in report and "evaluation.md" in report
    notebook = json.loads((a / "results" / "report.ipynb").read_text())
    assert any(o.get("output_type") == "display_data" for c in notebook["cells"] for o in c.get("outputs", []))
    samples = pd.read_parquet(a / "results" / "ls6" / "calibrated" / "samples" / "samples.parquet")
    assert set(samples["split"]) == {"train", "validation"} and set(samples["chain_nodes"]) == {1, 8}


@pytest.mark.slow
def test_real_trace_config_runs(tmp_path):
    if not LS6.exists():
        pytest.skip("real trace absent")
    work = tmp_path / "w"
    work.mkdir()
    cfg = (REPO / "config" / "ls6-real.yaml").read_text().replace("../shared/traces/ls6-a100.log", str(LS6))
    (work / "real.yaml").write_text(cfg)
    # the trace stage only: the samples of the real trace are a benchmark, not a test
    res = snakemake("traces", "-s", str(REPO / "Snakefile"), "-d", str(work), "--cores", "2",
                    "--configfile", str(work / "real.yaml"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = json.loads((work / "results" / "ls6" / "trace" / "clean_report.json").read_text())
    assert (report["rows_in"], report["rows_kept"]) == (24777, 24776)
    shutil.rmtree(work / ".snakemake", ignore_errors=True)


def test_report_rule_passes_all_clusters_to_papermill():
    # papermill takes one value per parameter: several clusters must arrive comma-separated
    res = snakemake("-n", "-p", "--forceall", "results/report.md")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "-p clusters frontera,longhorn,ls6" in res.stdout


def test_torch_fits_ask_for_a_gpu_only_when_the_config_trains_on_cuda(tmp_path):
    # the Slurm plugin turns the `gpu` resource into --gpus=N (profiles/slurm)
    for device, want in (("cpu", set()), ("cuda", {"dqn", "dqn_tuned", "pg", "pg_tuned"}),
                         ("cuda:1", {"dqn", "dqn_tuned", "pg", "pg_tuned"})):
        cfg = tmp_path / f"{device}.yaml"
        cfg.write_text((REPO / "config" / "tiny.yaml").read_text().replace("device: cpu", f"device: {device}"))
        res = snakemake("-n", "--forceall", "-d", str(tmp_path / "w"), "--configfile", str(cfg))
        assert res.returncode == 0, res.stdout + res.stderr
        gpu_fits = set()
        for job in re.split(r"\n(?=(?:local)?rule \w+:)", res.stdout):
            if "gpu=1" in job:
                assert "rule fit_policy:" in job
                gpu_fits.add(job.split("policy=")[1].split()[0].rstrip(","))
        assert gpu_fits == want, device
