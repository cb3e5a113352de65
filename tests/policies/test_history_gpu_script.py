"""examples/history-models-gpu.sh, the paper-size history models fitted on a GPU from a run's
samples: here on the CPU at a tiny width (the GPU run and its numbers: docs/results-ls6.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "history-models-gpu.sh"


def _run(samples, out, budget, **env):
    env = {**os.environ, "PYTHON": sys.executable, "WIDTH": "8", "EPOCHS": "1", "EXPERTS": "2",
           "BASELINES": "reactive oracle", **env}
    return subprocess.run(["bash", str(SCRIPT), str(samples), str(out), "cpu", str(budget)],
                          capture_output=True, text=True, env=env, timeout=900)


def test_fits_the_history_models_with_their_sizes_and_evaluates_them(synth, tmp_path):
    samples = tmp_path / "calibrated" / "samples"
    synth.save(samples)
    res = _run(samples, tmp_path / "out", 9999, POLICIES="transformer transformer_tuned")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    fit = json.loads((tmp_path / "out" / "models" / "n8" / "transformer" / "fit.json").read_text())
    assert fit["params"]["width"] == 8 and fit["params"]["device"] == "cpu" and fit["fit_seconds"] > 0
    tuned = json.loads((tmp_path / "out" / "models" / "n8" / "transformer_tuned" / "fit.json").read_text())
    assert tuned["final_model_from"] == "transformer"
    table = pd.read_csv(tmp_path / "out" / "eval" / "evaluation.csv")
    assert set(table["policy"]) == {"reactive", "oracle", "transformer", "transformer_tuned"}
    assert set(table["mode"]) == {"calibrated"}
    assert "transformer_tuned" in res.stdout and "skipped: \n" in res.stdout + "\n"


def test_a_spent_budget_skips_and_names_the_steps(synth, tmp_path):
    samples = tmp_path / "calibrated" / "samples"
    synth.save(samples)
    res = _run(samples, tmp_path / "out", 0, POLICIES="moe")
    assert res.returncode == 1 and "nothing fitted" in res.stderr
    skipped = (tmp_path / "out" / "skipped.txt").read_text()
    assert "n1 reactive oracle" in skipped and "n8 moe" in skipped


def test_config_takes_the_workflow_s_parameters_and_seed(synth, tmp_path):
    from mirage.config import load

    cfg = load(Path(__file__).resolve().parents[2] / "config" / "tiny.yaml")
    samples = tmp_path / "calibrated" / "samples"
    synth.save(samples)
    res = _run(samples, tmp_path / "out", 9999, POLICIES="transformer",
               CONFIG=str(Path(__file__).resolve().parents[2] / "config" / "tiny.yaml"))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    fit = json.loads((tmp_path / "out" / "models" / "n8" / "transformer" / "fit.json").read_text())
    want = cfg["policies"]["params"]["transformer"]
    assert fit["seed"] == cfg["seed"]
    assert {k: fit["params"][k] for k in want} == want  # epochs 2 here, EPOCHS=1 otherwise
