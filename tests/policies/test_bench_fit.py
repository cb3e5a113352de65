"""``mirage bench fit``: the workflow's fits of a config's policies, timed."""

from pathlib import Path

from mirage.cli import main
from mirage.policies.bench import bench_fit, fitted_names


def test_bench_fit_times_every_policy_as_the_workflow_fits_it(synth, tmp_path, capsys):
    samples = synth.save(tmp_path / "samples")
    config = {"seed": 5, "policies": {
        "names": ["reactive", "transformer_tuned", "transformer", "twin"],
        "params": {"transformer": {"width": 8, "epochs": 1},
                   "transformer_tuned": {"width": 8, "epochs": 1, "n_blocks": 2,
                                         "tune_every": 2}}}}
    table = bench_fit(samples, config, ["reactive", "transformer_tuned", "transformer"], [8],
                      out_dir=tmp_path / "models", budget_s=-1.0)
    # untuned before tuned, the tuned one taking its final fit; history models on two threads
    assert list(table["policy"]) == ["reactive", "transformer", "transformer_tuned"]
    assert list(table["threads"]) == [1, 2, 2]
    assert list(table["final_fit_shared"]) == [False, False, True]
    assert (table["seconds"] >= 0).all() and not table["within_budget"].any()  # budget < 0
    assert (tmp_path / "models" / "n8" / "transformer_tuned" / "fit.json").is_file()

    tiny = Path(__file__).resolve().parents[2] / "config" / "tiny.yaml"
    assert main(["bench", "fit", "--samples", str(samples), "--config", str(tiny),
                 "--chain-nodes", "1", "--policies", "reactive", "transformer"]) == 0
    out = capsys.readouterr().out
    assert "| transformer " in out and "n=1:" in out and "every fit within 300 s" in out


def test_bench_fit_leaves_the_replayed_twins_out():
    config = {"policies": {"names": ["reactive", "twin", "rf", "twin_tuned", "moe"]}}
    assert fitted_names(config) == ["reactive", "rf", "moe"]
