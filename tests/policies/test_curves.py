"""Learning curves (mirage.policies.curves, mirage.evaluate.curves, `mirage curves`): the
monitor changes no decision, each checkpoint's held-out cost is that of the network at that
point, and the plateau criterion reads flat, falling and stepped curves as stated."""

import numpy as np
import pandas as pd
import pytest

from mirage.cli import main
from mirage.evaluate.curves import TOLERANCE, drawn, plateau
from mirage.policies import make_policy
from mirage.policies.curves import HeldOut, learning_curve, time_split

SMALL = {"dqn": {"total_timesteps": 3_000, "learning_starts": 500}, "pg": {"updates": 12}}


def test_time_split_holds_out_the_latest_samples(train):
    fit_part, held = time_split(train, 0.25)
    assert len(fit_part) + len(held) == len(train) and len(held) == round(len(train) * 0.25)
    assert fit_part.samples["sample_start"].max() < held.samples["sample_start"].min()
    with pytest.raises(ValueError, match="held_share"):
        time_split(train, 1.0)


@pytest.mark.parametrize("name", ["dqn", "pg"])
def test_monitor_changes_no_decision_and_sees_increasing_steps(train, name):
    plain = make_policy(name, **SMALL[name]).fit(train, seed=4)
    steps = []
    watched = make_policy(name, **SMALL[name]).fit(train, seed=4,
                                                   monitor=lambda s, p: steps.append(s))
    np.testing.assert_array_equal(plain.decision_score(train.points),
                                  watched.decision_score(train.points))
    assert len(steps) >= 10 and steps == sorted(steps) and steps[0] < steps[-1]


@pytest.mark.parametrize("name", ["dqn", "pg"])
def test_last_checkpoint_scores_the_fitted_network(train, name):
    curve = learning_curve(lambda: make_policy(name, **SMALL[name]), name, train, [2])
    fit_part, held_part = time_split(train)
    held = HeldOut(held_part)
    policy = make_policy(name, **SMALL[name]).fit(fit_part, seed=2)
    assert curve["held_out_cost"].iloc[-1] == held.cost_of(policy.decision_score(held_part.points))
    assert curve["env_steps"].is_monotonic_increasing
    assert (curve["reactive_cost"] == held.reactive_cost).all()
    assert held.oracle_cost <= curve["held_out_cost"].min()


def _curve(costs, seeds=(0, 1), reactive=1.0):
    return pd.DataFrame([{"policy": "dqn", "seed": s, "env_steps": 100 * i, "held_out_cost": c,
                          "reactive_cost": reactive, "oracle_cost": 0.1}
                         for s in seeds for i, c in enumerate(costs)])


def test_plateau_of_flat_falling_and_stepped_curves():
    flat = plateau(_curve([0.5] * 20))
    assert flat["plateau_steps"] == 0 and flat["converged"] and flat["final_cost"] == 0.5
    falling = plateau(_curve(np.linspace(1.0, 0.2, 20)))
    assert not falling["converged"] and falling["plateau_steps"] > 0.8 * 1900
    stepped = plateau(_curve([1.0] * 6 + [0.4] * 14))
    assert stepped["plateau_steps"] == 600 and stepped["converged"]
    # a wobble within the tolerance (5 % of reactive's cost) is flat
    wobble = plateau(_curve([1.0] * 4 + [0.4 + 0.8 * TOLERANCE * (-1) ** i for i in range(16)]))
    assert wobble["plateau_steps"] == 400


def test_drawn_averages_seeds_with_their_range():
    c = pd.concat([_curve([1.0, 0.6, 0.4], seeds=[0]),
                   _curve([1.0, 0.8, 0.6], seeds=[1])]).assign(mode="calibrated", chain_nodes=8)
    means, flats = drawn(c)
    assert means["held_out_cost"].tolist() == pytest.approx([1.0, 0.7, 0.5])
    assert means["low"].tolist() == [1.0, 0.6, 0.4] and means["high"].tolist() == [1.0, 0.8, 0.6]
    assert flats.loc[0, "policy"] == "dqn" and flats.loc[0, "mode"] == "calibrated"


def test_curves_command_writes_curves_plateaus_and_figure(synth, tmp_path, capsys):
    samples = tmp_path / "samples"
    synth.save(samples)
    out = tmp_path / "curves"
    assert main(["curves", "pg", "--samples", str(samples), "--chain-nodes", "1", "--seed", "3",
                 "--seeds", "2", "--params", '{"pg": {"updates": 6}}', "--out", str(out)]) == 0
    table = pd.read_csv(out / "curves.csv")
    assert set(table["seed"]) == {3, 4} and (table["chain_nodes"] == 1).all()
    assert pd.read_csv(out / "plateaus.csv")["policy"].tolist() == ["pg"]
    assert "pg seed 4:" in capsys.readouterr().out
    assert main(["figures", "curves", "--curves", "calibrated", str(out),
                 "--out-dir", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "curves.png").stat().st_size > 0


@pytest.mark.parametrize("argv, message", [
    (["rf"], "reinforcement-learning policies"),
    (["dqn_tuned"], "a tuned one trains as its untuned policy does"),
    (["pg", "--seeds", "0"], "at least 1 training seed"),
    (["pg", "--params", "{pg: 1}"], "--params '{pg: 1}': not JSON"),
    (["pg", "--chain-nodes", "3"], "0 training samples with chain_nodes=3, too few for a "
                                   "held-out part (at least 4). Fix: a chain size of the run's "
                                   "samples (1"),
])
def test_curves_command_refuses_what_it_cannot_draw(synth, tmp_path, capsys, argv, message):
    samples = tmp_path / "samples"
    synth.save(samples)
    code = main(["curves", *argv, "--samples", str(samples), "--seed", "0",
                 "--out", str(tmp_path / "o")]
                + ([] if "--chain-nodes" in argv else ["--chain-nodes", "1"]))
    assert code == 2 and message in capsys.readouterr().err
