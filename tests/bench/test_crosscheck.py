"""``mirage bench crosscheck``: this project's RL against Stable-Baselines3, same environment,
budgets and seeds (small budgets on the synthetic samples)."""

import json

import numpy as np
import pytest

from mirage.bench.crosscheck import SB3_OF, crosscheck, fit_sb3, sb3_score
from mirage.cli import main
from mirage.policies.catalogue import CATALOGUE

#: the algorithms with a counterpart that are registered here (ppo once it is)
NAMES = [n for n in SB3_OF if n in CATALOGUE.fitted()]
STEPS = 2000


@pytest.fixture(scope="module")
def samples(synth, tmp_path_factory):
    return synth.save(tmp_path_factory.mktemp("cc") / "samples")


def _impls(name):
    """The implementations run per algorithm: ours, SB3's defaults and, for the actor-critics,
    SB3 started as ours are."""
    return ("ours", "sb3") + (("sb3_our_start",) if SB3_OF[name] != "DQN" else ())


def _numbers(result):
    """Everything but the timings."""
    return {name: {impl: {k: v for k, v in a[impl].items() if k != "seconds"}
                   for impl in _impls(name)} | {"verdict": a["verdict"]}
            for name, a in result["algorithms"].items()}


def test_crosscheck_writes_both_implementations_per_seed_repeatably(samples, synth, tmp_path,
                                                                     capsys):
    out = tmp_path / "cc.json"
    assert main(["bench", "crosscheck", "--samples", str(samples), "--chain-nodes", "8",
                 "--policies", *NAMES, "--seeds", "2", "--seed", "3",
                 "--budget-steps", str(STEPS), "--out", str(out),
                 "--csv", str(tmp_path / "cc.csv")]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert set(result["algorithms"]) == set(NAMES) and result["seeds"] == [3, 4]
    assert result["train_samples"] + result["held_out_samples"] == 20
    assert result["oracle_cost"] <= result["reactive_cost"]
    for name, a in result["algorithms"].items():
        assert a["sb3_algorithm"] == SB3_OF[name] and f"SB3 {SB3_OF[name]}" in printed
        assert set(a) >= set(_impls(name))
        for impl in _impls(name):
            assert len(a[impl]["cost"]) == 2 and all(c >= 0 for c in a[impl]["cost"])
            assert a[impl]["mean"] == pytest.approx(np.mean(a[impl]["cost"]))
        # SB3 runs the environment steps our fit of the same seed took
        assert a["sb3"]["env_steps"] == a["ours"]["env_steps"]
        like = a[_impls(name)[-1]]  # the like-for-like comparison decides
        assert a["verdict"] == like["verdict"] == ("agree" if a["gap"] <= a["spread"]
                                                   else "differ")
    assert result["algorithms"]["dqn"]["ours"]["env_steps"] == [STEPS, STEPS]
    assert result["algorithms"]["dqn"]["stride"] == 3  # our DQN's training stride
    assert (tmp_path / "cc.csv").read_text().count("\n") == 1 + sum(map(len, map(_impls, NAMES)))

    train = synth.split("train")
    again = crosscheck(train.subset(train.samples.loc[train.samples["chain_nodes"] == 8,
                                                      "sample_id"]),
                       NAMES, seeds=[3, 4], budget_steps=STEPS, progress=lambda *_: None)
    assert _numbers(again) == _numbers(result)


def test_sb3_score_is_the_greedy_action(train):
    # score > 0 exactly where SB3's own deterministic predict submits
    from mirage.outcomes import compact_matrix

    for algo in ("DQN", "PPO"):
        model, scaler, _ = fit_sb3(algo, train, stride=3, hidden=16, seed=0, steps=300,
                                   c_I=1.0, c_O=0.5, params={"learning_starts": 50}
                                   if algo == "DQN" else {"n_steps": 64, "batch_size": 32})
        X = scaler.transform(compact_matrix(train.points, train.feature_columns))[:500]
        action, _ = model.predict(X, deterministic=True)
        assert np.array_equal(sb3_score(model, X) > 0, action == 1), algo


@pytest.mark.parametrize("bad, fix", [
    (["--policies", "rf"], "Fix: pass some of"),
    (["--chain-nodes", "3"], "Fix: a chain size of the run's samples (1, 8;"),
    (["--budget-steps", "0"], "Fix: pass the environment steps"),
    (["--sb3-params", "{gamma"], "Fix: a map of policy name"),
])
def test_crosscheck_refuses_bad_arguments(samples, tmp_path, capsys, bad, fix):
    args = {"--chain-nodes": "8", "--policies": "dqn", "--budget-steps": "100"}
    for flag, value in zip(bad[::2], bad[1::2]):
        args[flag] = value
    argv = ["bench", "crosscheck", "--samples", str(samples), "--out", str(tmp_path / "x.json")]
    assert main(argv + [x for kv in args.items() for x in kv]) == 2
    assert fix in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
