"""``mirage figures ...``: every figure drawn from the tables the other stages wrote, and those
stages (evaluate, sim fidelity, trace summary) writing tables only."""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from mirage.cli import main
from mirage.evaluate.cli import LEAD_SWEEP_COLUMNS
from mirage.figures import style
from mirage.figures.cli import evaluation_figures
from mirage.policies.synthetic import make_synthetic

POLICIES = ["reactive", "average", "fixed_lead", "plan_lead", "oracle"]
MODES = ("calibrated", "compat")
CELL_FIGURES = ("x_cdf", "x_box", "zero_interruption", "cost_vs_oracle",
                "interruption_reduction", "lead_sweep")
PNG, PDF = b"\x89PNG\r\n\x1a\n", b"%PDF"


def figure_names(out_dir):
    """The figures in ``out_dir``, checking each is a non-empty PNG and PDF and nothing else
    is there."""
    files = sorted(p.name for p in out_dir.iterdir())
    names = sorted({p.rsplit(".", 1)[0] for p in files})
    assert files == sorted([f"{n}.png" for n in names] + [f"{n}.pdf" for n in names]), files
    for n in names:
        assert re.fullmatch(r"[a-z0-9_]+", n), n
        assert (out_dir / f"{n}.png").read_bytes()[:8] == PNG
        assert (out_dir / f"{n}.pdf").read_bytes()[:4] == PDF
    return set(names)


@pytest.fixture(autouse=True)
def draft_png(monkeypatch):
    """Draft resolution: the tests check what is drawn, not how finely (saves most of the time)."""
    monkeypatch.setattr(style, "PNG_DPI", 50)


def run(capsys, *argv):
    """The command in process, its exit status and printed lines."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


@pytest.fixture(scope="module")
def stages(tmp_path_factory):
    """Samples, fitted models (the baselines, plus a small DQN and policy gradient on 1-node
    chains) and `mirage evaluate`'s tables for two simulator modes, as the workflow lays them out."""
    root = tmp_path_factory.mktemp("stages")
    make_synthetic(n_train=40, n_val=30, seed=0, clusters=("ls6",)).validate().save(root / "samples")
    models = root / "models"
    for nodes in (1, 8):
        for name in POLICIES:
            assert main(["fit", name, "--samples", str(root / "samples"), "--chain-nodes", str(nodes),
                         "--seed", "0", "--out", str(models / f"n{nodes}" / name)]) == 0
    for name, params in (("dqn", {"total_timesteps": 1500, "learning_starts": 200}),
                         ("pg", {"updates": 12})):
        assert main(["fit", name, "--samples", str(root / "samples"), "--chain-nodes", "1",
                     "--seed", "0", "--params", json.dumps(params),
                     "--out", str(models / "n1" / name)]) == 0
    runs = [a for m in MODES for a in ("--run", m, str(root / "samples"), str(models))]
    assert main(["evaluate", *runs, "--policies", *POLICIES, "--out-dir", str(root / "eval")]) == 0
    return root


# ------------------------------------------------------------------------------ evaluate
def test_evaluate_writes_tables_and_no_figure(stages):
    out = stages / "eval"
    assert sorted(p.name for p in out.iterdir()) == [
        "evaluation.csv", "evaluation.md", "fits.csv", "lead_sweep.csv", "outcomes.parquet",
        "seeds.csv"]
    assert not list(stages.rglob("*.png")) and not list(stages.rglob("*.pdf"))
    sweep = pd.read_csv(out / "lead_sweep.csv")
    assert list(sweep.columns) == LEAD_SWEEP_COLUMNS
    assert set(sweep.groupby(["mode", "chain_nodes", "policy", "split"]).groups) == {
        (m, n, p, s) for m in MODES for n in (1, 8) for p in ("fixed_lead", "plan_lead")
        for s in ("train", "validation")}
    # the validation sweep at the fitted lead is the policy's own evaluation
    table = pd.read_csv(out / "evaluation.csv")
    val = sweep[sweep["split"] == "validation"]
    for (mode, nodes, pol), g in val.groupby(["mode", "chain_nodes", "policy"]):
        at = g.loc[(g["lead_h"] - g["chosen_lead_h"]).abs().idxmin(), "cost"]
        row = table[(table["mode"] == mode) & (table["chain_nodes"] == nodes)
                    & (table["policy"] == pol) & (table["load_level"] == "all")]
        assert at == pytest.approx(row["cost"].iloc[0])


def test_evaluate_no_longer_takes_a_figures_dir(stages, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--run", "calibrated", str(stages / "samples"), str(stages / "models"),
              "--policies", "reactive", "--out-dir", str(stages / "x"), "--figures-dir", "f"])
    assert exc.value.code == 2 and "--figures-dir" in capsys.readouterr().err


def test_figures_evaluation(stages, capsys, tmp_path):
    ev, out = stages / "eval", tmp_path / "figures" / "evaluation"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none escapes the drawing
        code, lines, _ = run(capsys, "figures", "evaluation", "--outcomes", ev / "outcomes.parquet",
                             "--evaluation", ev / "evaluation.csv",
                             "--lead-sweep", ev / "lead_sweep.csv", "--label", "Lonestar6 A100",
                             "--out-dir", out)
    assert code == 0
    expected = {f"{kind}_{m}_n{n}" for kind in CELL_FIGURES for m in MODES for n in (1, 8)}
    expected |= {f"headline_{m}" for m in MODES}
    assert figure_names(out) == expected | {"level_tradeoff_ls6"}
    assert len([ln for ln in lines if not ln.startswith("note:")]) == len(expected) + 1


def test_the_headline_names_the_policies_a_reader_asks_about(stages):
    """Interruption against overlap, one panel per chain size: reactive, the best baseline,
    REINFORCE, the best learned policy and the oracle named in the legend, a REINFORCE that
    stays reactive said to coincide with it."""
    from mirage.evaluate.headline import headline_points, named_policies
    from mirage.figures.headline import headline_figure

    out = pd.read_parquet(stages / "eval" / "outcomes.parquet")
    out = out[out["mode"] == "calibrated"]
    # two learned policies: REINFORCE that stays reactive, a forest that is the oracle plus 0.1 h
    pg = out[out["policy"] == "reactive"].assign(policy="pg")
    rf = out[out["policy"] == "oracle"].assign(policy="rf")
    rf["cost"] += 0.1
    out = pd.concat([out, pg, rf], ignore_index=True)
    one = out[out["chain_nodes"] == 1]
    roles = named_policies(one)
    cost = one.groupby("policy")["cost"].mean()
    best_base = cost[["average", "fixed_lead", "plan_lead"]].idxmin()
    assert roles == {"reactive": "reactive", best_base: "best baseline",
                     "pg": "paper's method", "rf": "best learned", "oracle": "oracle"}
    fig = headline_figure(headline_points(out), "ls6")
    axes = fig.axes
    assert len(axes) == 2 and "1-node" in axes[0].get_title() and "8-node" in axes[1].get_title()
    labels = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert [label.split(" ")[0] for label in labels] == list(roles)  # in the roles' order
    assert "pg (paper's method) = reactive" in labels
    assert axes[0].get_xlim()[0] == 0 and axes[0].get_ylim()[0] == 0


def test_evaluation_without_reactive_or_oracle(stages, capsys, tmp_path):
    ev = stages / "eval"
    outcomes = pd.read_parquet(ev / "outcomes.parquet")
    table = pd.read_csv(ev / "evaluation.csv")
    keep = ["average", "fixed_lead"]
    outcomes = outcomes[outcomes["policy"].isin(keep) & (outcomes["chain_nodes"] == 8)]
    outcomes.to_parquet(tmp_path / "o.parquet")
    table[table["policy"].isin(keep) & (table["chain_nodes"] == 8)].to_csv(tmp_path / "e.csv",
                                                                          index=False)
    pd.DataFrame(columns=LEAD_SWEEP_COLUMNS).to_csv(tmp_path / "s.csv", index=False)
    code, lines, _ = run(capsys, "figures", "evaluation", "--outcomes", tmp_path / "o.parquet",
                         "--evaluation", tmp_path / "e.csv", "--lead-sweep", tmp_path / "s.csv",
                         "--out-dir", tmp_path / "out")
    assert code == 0
    names = figure_names(tmp_path / "out")
    # the oracle and reactive references come from the samples themselves (the points'
    # cheapest and last): their figures are drawn without those policies
    assert {"cost_vs_oracle_calibrated_n8", "interruption_reduction_compat_n8"} <= names
    assert not any(n.startswith("lead_sweep") for n in names)
    assert any(ln.startswith("note: lead_sweep skipped") for ln in lines)


def test_figures_without_a_reference_are_skipped_with_a_note(stages):
    table = pd.read_csv(stages / "eval" / "evaluation.csv")
    one = table[(table["mode"] == "calibrated") & (table["chain_nodes"] == 1)].copy()
    one["interruption_reduction_pct"] = np.nan  # the reactive policy never interrupted
    one["oracle_gap"] = one["cost"]  # the oracle's cost 0 everywhere: no ratio
    outcomes = pd.read_parquet(stages / "eval" / "outcomes.parquet").iloc[:0]
    got = {name: (fig, note) for name, fig, note in
           evaluation_figures(outcomes, one.drop(columns="zero_interruption_share"))}
    for name in ("interruption_reduction_calibrated_n1", "cost_vs_oracle_calibrated_n1",
                 "zero_interruption_calibrated_n1", "lead_sweep"):
        fig, note = got[name]
        assert fig is None and note, name
    assert "zero_interruption_share" in got["zero_interruption_calibrated_n1"][1]


def test_figures_reads_name_the_missing_file(tmp_path, capsys):
    code, _, err = run(capsys, "figures", "evaluation", "--outcomes", tmp_path / "no.parquet",
                       "--evaluation", tmp_path / "no.csv", "--out-dir", tmp_path / "out")
    assert code == 2 and err.startswith("mirage: error: ") and "no.parquet" in err


# ------------------------------------------------------------------------------ training
def test_fit_writes_training_history_and_figures_draw_it(stages, capsys, tmp_path):
    models = stages / "models"
    dqn = pd.read_csv(models / "n1" / "dqn" / "training.csv")
    assert list(dqn.columns) == ["step", "epsilon", "mean_episode_cost"] and len(dqn) > 5
    pg = pd.read_csv(models / "n1" / "pg" / "training.csv")
    assert list(pg.columns) == ["update", "mean_episode_cost", "entropy"] and len(pg) == 12
    assert not (models / "n1" / "fixed_lead" / "training.csv").exists()
    code, lines, _ = run(capsys, "figures", "training", "--models", "calibrated", models,
                         "--models", "compat", models, "--label", "L", "--out-dir", tmp_path / "t")
    assert code == 0 and figure_names(tmp_path / "t") == {"training_dqn", "training_pg"}
    assert len(lines) == 2


def test_training_without_histories_writes_nothing(stages, capsys, tmp_path):
    code, lines, _ = run(capsys, "figures", "training", "--models", "calibrated",
                         stages / "models" / "n8", "--out-dir", tmp_path / "t")
    assert code == 0 and list((tmp_path / "t").iterdir()) == []
    assert lines == ["note: training skipped: no training history of a DQN or policy-gradient fit"]


# ------------------------------------------------------------------------------ trace and fidelity
@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("trace")
    assert main(["sim", "synth", "ls6", "--seed", "1", "--days", "4", "--start", "2023-01-01",
                 "--out", str(d / "clean.parquet")]) == 0
    return d / "clean.parquet"


def test_figures_trace(trace, capsys, tmp_path):
    code, lines, _ = run(capsys, "figures", "trace", "--clean", trace, "--label", "ls6 synthetic",
                         "--reference", trace, "--reference-label", "again", "--out-dir", tmp_path)
    assert code == 0 and figure_names(tmp_path) == {"trace_overview"} and len(lines) == 1


def test_fidelity_points_and_figures(trace, capsys, tmp_path):
    report, points = tmp_path / "fidelity.json", tmp_path / "fidelity_points.parquet"
    assert main(["sim", "fidelity", str(trace), "--cluster", "ls6", "--windows", "2023-01-02",
                 "--window-days", "1", "--out", str(report), "--points", str(points)]) == 0
    capsys.readouterr()
    assert not list(tmp_path.glob("*.png"))
    rep, pts = json.loads(report.read_text()), pd.read_parquet(points)
    from mirage.figures.fidelity import loo_waits

    waits = loo_waits(pts)
    for per in rep["periods"]:  # the points are the jobs behind the report's numbers
        d = waits[waits["period"] == per["period"]["name"]]
        assert len(d) == per["period"]["loo_jobs"] == per["period"]["long_jobs"]
        for pred in ("sim", "zero_wait", "compat"):
            assert d[f"err_{pred}_h"].mean() == pytest.approx(per["loo_mae_h"][pred])
    code, lines, _ = run(capsys, "figures", "fidelity", "--report", report, "--points", points,
                         "--label", "ls6", "--out-dir", tmp_path / "f")
    assert code == 0 and len(lines) == 4
    assert figure_names(tmp_path / "f") == {"daily_wait", "fidelity_metrics", "loo_wait", "loo_error"}
    code, lines, _ = run(capsys, "figures", "fidelity", "--report", report,
                         "--out-dir", tmp_path / "g")
    assert code == 0 and figure_names(tmp_path / "g") == {"daily_wait", "fidelity_metrics"}
    assert sum(ln.startswith("note: loo_") for ln in lines) == 2


# ------------------------------------------------------------------------------ style
def test_one_colour_per_policy_in_every_figure():
    from mirage.policies.catalogue import CATALOGUE
    from mirage.report import BASELINES

    colours = [style.policy_color(p) for p in CATALOGUE.names()]
    assert len(set(colours)) == len(CATALOGUE)  # all apart, the twin too
    assert style.policy_color("my_policy") == style.policy_color("my_policy")
    assert {p for p in CATALOGUE.names() if style.policy_style(p)["marker"] == "s"} == set(BASELINES)
    assert style.policy_style("rf_tuned")["ls"] != style.policy_style("rf")["ls"]


def test_save_writes_png_and_pdf_and_checks_the_name(tmp_path):
    import matplotlib.pyplot as plt

    with style.use_style():
        fig = plt.figure()
    with pytest.raises(ValueError, match="a-z0-9_"):
        style.save(fig, tmp_path / "Bad-Name")
    with style.use_style():
        fig = plt.figure()
    png, pdf = style.save(fig, tmp_path / "ok_1.png")
    assert png.name == "ok_1.png" and pdf.read_bytes()[:4] == PDF
