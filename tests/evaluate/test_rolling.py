"""The rolling-origin evaluation's pooled verdicts (mirage.evaluate.rolling, rule rolling)."""

import numpy as np
import pandas as pd
import pytest

from mirage.errors import MirageError
from mirage.evaluate.rolling import (BEST, pool, pooled_evaluation, rl_methods, rolling_markdown,
                                     rolling_verdicts)
from mirage.outcomes import load_level


def _fold(n, first_id, gain, seed, seeds=2):
    """One fold's outcomes of ``n`` medium-load samples: reactive, quantile (a baseline-like
    rule), rf, and pg with ``seeds`` training seeds whose interruption is reactive's minus
    ``gain`` hours (never below zero)."""
    rng = np.random.default_rng(seed)
    rows = []
    for sid in range(first_id, first_id + n):
        r = rng.uniform(3.0, 10.0)
        for policy, x, k in [("reactive", r, 0), ("average", r + 0.3, 0),
                             ("rf", r - 0.2 * gain, 0), *[("pg", r - gain, s) for s in range(seeds)]]:
            rows.append({"sample_id": sid, "cluster": "ls6", "chain_nodes": 1, "mode": "calibrated",
                         "reactive_x_h": r, "policy": policy, "seed": k, "x_h": x,
                         "cost": max(x, 0.0) + 0.5 * max(-x, 0.0),
                         "interruption_h": max(x, 0.0), "overlap_h": max(-x, 0.0),
                         "overlap_node_hours": max(-x, 0.0), "oracle_cost": 0.0})
    out = pd.DataFrame(rows)
    out["load_level"] = load_level(out["reactive_x_h"])
    return out


def _cell(table, comparison, level="medium"):
    return table[(table["comparison"] == comparison) & (table["load_level"] == level)].iloc[0]


def test_a_clearly_better_rl_policy_is_better_on_the_pooled_folds():
    # 20 samples in each of two folds: 40 pooled, each fold alone too few
    out = pool({"2022-12-01": _fold(20, 0, 2.0, 1), "2023-01-01": _fold(20, 100, 2.0, 2)})
    table = rolling_verdicts(out, seed=3)
    row = _cell(table, "pg vs reactive")
    assert (row["n"], row["folds"]) == (40, 2)
    assert row["verdict"] == "better" and row["high"] < 0
    assert row["value"] == pytest.approx(-2.0)
    assert _cell(table, BEST)["verdict"] == "better"
    assert _cell(table, BEST)[["policy", "against"]].tolist() == ["pg", "reactive"]
    assert _cell(table, "pg vs best non-RL learned")["against"] == "rf"
    # the paper's interruption reduction: 2 h of 3-10 h is about 30 %, above its 17 %
    claim = _cell(table, "pg: interruption reduction")
    assert claim["verdict"] == "reproduced" and claim["low"] > 17
    # every sample is medium: no low or heavy rows, and "all" holds the same 40
    assert set(table["load_level"]) == {"medium", "all"}
    assert "pg vs reactive" in rolling_markdown(table, "Lonestar6 A100")


def test_equal_policies_are_equivalent_noisy_ones_within_noise_and_ten_samples_too_few():
    def with_noise(sd, seed):
        noisy = _fold(40, 0, 0.0, 4)
        pg = noisy["policy"] == "pg"
        # pg is reactive plus zero-mean noise: no difference to find
        noise = np.random.default_rng(seed).normal(0.0, sd, pg.sum())
        noisy.loc[pg, "cost"] = noisy.loc[pg, "cost"] + noise - noise.mean()
        return pool({"f": noisy})

    # a little noise: the interval holds 0 and lies within the default +-0.25 h margin
    quiet = with_noise(0.5, 5)
    row = _cell(rolling_verdicts(quiet), "pg vs reactive")
    assert row["verdict"] == "equivalent" and -0.25 < row["low"] < 0 < row["high"] < 0.25
    assert np.isnan(row["n_to_decide"])
    # without a margin the same interval is only within noise
    row = _cell(rolling_verdicts(quiet, margin_h=0.0), "pg vs reactive")
    assert row["verdict"] == "within noise" and row["low"] < 0 < row["high"]
    # much noise: within noise past the margin, with the samples it would take to decide
    table = rolling_verdicts(with_noise(4.0, 5))
    row = _cell(table, "pg vs reactive")
    assert row["verdict"] == "within noise" and row["high"] - row["low"] > 0.5
    assert row["n_to_decide"] > row["n"]
    assert "samples to decide" in rolling_markdown(table)
    few = _cell(rolling_verdicts(pool({"f": _fold(10, 0, 2.0, 6)})), "pg vs reactive")
    assert (few["n"], few["verdict"]) == (10, "too few samples")
    claim = _cell(rolling_verdicts(pool({"f": _fold(10, 0, 2.0, 6)})), "pg: zero-interruption share")
    assert claim["verdict"] == "too few samples"


def test_a_sample_in_two_folds_is_refused():
    with pytest.raises(MirageError, match="more than one fold"):
        pool({"a": _fold(5, 0, 1.0, 1), "b": _fold(5, 3, 1.0, 2)})


def test_rl_methods_are_the_catalogues_seeded_torch_policies():
    assert rl_methods(["rf", "pg_tuned", "reactive", "dqn", "pg_transformer"]) == ["dqn", "pg_tuned"]


def test_the_pooled_evaluation_is_every_policys_mean_over_all_folds_samples():
    a, b = _fold(20, 0, 2.0, 1), _fold(30, 100, 1.0, 2)
    out = pool({"2022-12-01": a, "2023-01-01": b})
    table, spread = pooled_evaluation(out)
    row = table[(table["policy"] == "rf") & (table["load_level"] == "all")].iloc[0]
    both = pd.concat([a, b])
    assert (row["cluster"], row["mode"], row["n"]) == ("ls6", "calibrated", 50)
    assert row["cost"] == pytest.approx(both.loc[both["policy"] == "rf", "cost"].mean())
    # pg: two training seeds, the same in every fold; its row is the mean over them
    pg = table[(table["policy"] == "pg") & (table["load_level"] == "all")].iloc[0]
    assert pg["seeds"] == 2
    assert pg["cost"] == pytest.approx(both.loc[both["policy"] == "pg", "cost"].mean())
    assert set(spread["policy"]) == {"pg"} and (spread["seeds"] == 2).all()


def test_the_rolling_command_writes_the_pooled_evaluation_for_expected_values(tmp_path):
    from mirage.cli import main
    from mirage.evaluate.expected import check, expected_from, read_seeds

    paths = []
    for name, part in (("f1", _fold(20, 0, 2.0, 1)), ("f2", _fold(20, 100, 2.0, 2))):
        paths += ["--fold", name, str(tmp_path / f"{name}.parquet")]
        part.to_parquet(paths[-1])
    ev = tmp_path / "rolling" / "evaluation.csv"
    main(["rolling", *paths, "--table", str(tmp_path / "rolling.csv"),
          "--out", str(tmp_path / "rolling.md"), "--evaluation", str(ev)])
    table = pd.read_csv(ev)
    assert (tmp_path / "rolling" / "seeds.csv").exists()
    res = check(table, expected_from(table, seeds=read_seeds([ev])))
    assert res["ok"].all() and len(res) == 4 * 4  # 4 policies x 4 metrics, all levels
