"""``mirage bench fit``: the workflow's fits of a config's policies, timed."""

from pathlib import Path

from mirage.cli import main
from mirage.bench.fit import bench_fit, fitted_names


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


def test_bench_fit_on_a_few_samples_with_other_settings(synth, tmp_path, capsys):
    # the paper's sizes are measured on a few samples: --train-samples and --params
    import json

    samples = synth.save(tmp_path / "samples")
    config = {"seed": 5, "policies": {"names": ["transformer"],
                                      "params": {"transformer": {"width": 8, "epochs": 2}}}}
    table = bench_fit(samples, config, ["transformer"], [8], out_dir=tmp_path / "m",
                      train_samples=3, params={"transformer": {"epochs": 1}})
    assert table["train_samples"].tolist() == [3] and table["peak_rss_gb"].iloc[0] > 0
    info = json.loads((tmp_path / "m" / "n8" / "transformer" / "fit.json").read_text())
    assert info["params"]["width"] == 8 and info["params"]["epochs"] == 1
    first = synth.samples[(synth.samples["split"] == "train") & (synth.samples["chain_nodes"] == 8)]
    want = first.sort_values(["sample_start", "sample_id"])["sample_id"].head(3).tolist()
    assert info["train_points"] == int(synth.points["sample_id"].isin(want).sum())
    tiny = Path(__file__).resolve().parents[2] / "config" / "tiny.yaml"
    for bad in (["--params", "{moe"], ["--params", '{"moe": 1}'], ["--train-samples", "0"]):
        assert main(["bench", "fit", "--samples", str(samples), "--config", str(tiny),
                     "--chain-nodes", "8", "--policies", "reactive", *bad]) == 2
        assert "Fix:" in capsys.readouterr().err


def test_bench_fit_leaves_the_replayed_twins_out():
    config = {"policies": {"names": ["reactive", "twin", "rf", "twin_tuned", "moe"]}}
    assert fitted_names(config) == ["reactive", "rf", "moe"]
