"""Goal checks of the run report: the per-cell verdict with its bootstrap interval, and the
strict reading (one policy winning every load level)."""

import numpy as np
import pandas as pd
import pytest

from mirage.errors import MirageError
from mirage.evaluate.metrics import (block_length, paired_difference, resample_weights,
                                     samples_to_decide, summarize, verdict)
from mirage.report import build_report, goal_checks


def _outcomes(costs: dict[str, list[float]], levels: list[str], mode="calibrated", nodes=8):
    """Per-sample outcomes with the given cost per policy; x_h = cost (all interruption)."""
    rows = []
    for policy, cs in costs.items():
        for sid, (c, lvl) in enumerate(zip(cs, levels)):
            rows.append(dict(sample_id=sid, cluster="c", chain_nodes=nodes, reactive_x_h=1.0,
                             oracle_cost=0.0, load_level=lvl, policy=policy, k=0, x_h=c,
                             interruption_h=c, overlap_h=0.0, overlap_node_hours=0.0,
                             cost=c, mode=mode))
    return pd.DataFrame(rows)


def _table(out):
    return pd.concat([summarize(g.drop(columns="mode")).assign(mode=m)
                      for m, g in out.groupby("mode")], ignore_index=True)


def test_paired_difference_by_hand():
    rng = np.random.default_rng(1)
    base = rng.exponential(1.0, 60)
    out = _outcomes({"a": list(base - 0.2), "b": list(base)}, ["low"] * 60)
    d = paired_difference(out, "a", "b", seed=3)
    # a constant difference has no sampling noise, however noisy the costs themselves
    assert d["diff"] == pytest.approx(-0.2) and d["low"] == pytest.approx(-0.2)
    assert d["high"] == pytest.approx(-0.2) and d["n"] == 60
    noisy = _outcomes({"a": list(base), "b": list(rng.permutation(base))}, ["low"] * 60)
    d1, d2 = (paired_difference(noisy, "a", "b", seed=s) for s in (5, 5))
    assert d1 == d2 and d1["low"] < 0 < d1["high"] and d1["diff"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match=r"\['missing'\] are not in the outcomes"):
        paired_difference(noisy, "a", "missing")
    with pytest.raises(ValueError, match="lack an outcome"):
        paired_difference(noisy[~((noisy.policy == "a") & (noisy.sample_id == 0))], "a", "b")


def test_the_pick_of_the_best_is_redone_in_every_resample():
    # ten learned policies of pure noise around the baseline's cost: the cheapest of them on
    # the observed samples looks better, but the interval that redoes the pick must not call
    # it better much more often than a 95 % interval should, while freezing the pick does
    rng = np.random.default_rng(4)
    names = [f"m{i}" for i in range(10)]
    diffs, redone, frozen = [], [], []
    for trial in range(40):
        costs = {m: list(1.0 + rng.normal(0, 0.5, 60)) for m in names}
        costs["base"] = list(1.0 + rng.normal(0, 0.5, 60))
        out = _outcomes(costs, ["low"] * 60)
        d = paired_difference(out, names, ["base"], seed=trial, n_boot=500)
        best = min(names, key=lambda m: np.mean(costs[m]))
        diffs.append(d["diff"])
        redone.append(verdict(d))
        frozen.append(verdict(paired_difference(out, best, "base", seed=trial, n_boot=500)))
    assert np.mean(diffs) < -0.05  # the observed pick is flattered
    assert redone.count("better") <= 3 < frozen.count("better")


def test_verdicts_need_samples_and_tell_identical_apart():
    out = _outcomes({"a": [0.5, 0.1, 0.2, 0.3], "b": [1.5, 1.1, 1.2, 1.3]}, ["low"] * 4)
    d = paired_difference(out, "a", "b")
    assert d["high"] < 0 and verdict(d) == "too few samples"  # 4 samples: not a verdict
    assert verdict(d, min_samples=4) == "better"
    same = _outcomes({"a": [0.5] * 30, "b": [0.5] * 30}, ["low"] * 30)
    assert verdict(paired_difference(same, "a", "b")) == "identical"
    # a mean over training seeds that all chose as "b" did differs by rounding alone
    rounded = _outcomes({"a": [(0.1 + 0.2 + 0.3) / 3 * k for k in range(1, 31)],
                         "b": [0.2 * k for k in range(1, 31)]}, ["low"] * 30)
    d = paired_difference(rounded, "a", "b")
    assert d["diff"] != 0.0 and verdict(d) == "identical"


def test_an_interval_within_the_margin_is_equivalent_and_one_past_it_says_what_would_decide():
    d = {"diff": 0.1, "low": -0.1, "high": 0.2, "n": 100, "identical": False}
    assert verdict(d, margin_h=0.25) == "equivalent"
    assert verdict(d) == verdict(d, margin_h=0.0) == "within noise"  # no margin: no equivalence
    assert verdict(d, margin_h=0.2) == "within noise"  # the interval reaches the margin
    assert verdict({**d, "low": 0.01}, margin_h=0.25) == "worse"  # excluding 0 decides first
    assert verdict({**d, "n": 10}, margin_h=0.25) == "too few samples"
    wide = {"diff": 0.1, "low": -0.3, "high": 0.5, "n": 100, "identical": False}
    # half-width 0.4 must shrink to 0.15 (inside +-0.25 around 0.1) or to 0.1 (excluding 0)
    assert samples_to_decide(wide, 0.25) == np.ceil(100 * (0.4 / 0.15) ** 2)
    assert samples_to_decide(wide, 0.0) == 100 * (0.4 / 0.1) ** 2
    assert samples_to_decide({**wide, "diff": 0.0}, 0.0) == np.inf


def test_goal_checks_say_better_worse_equivalent_or_within_noise():
    levels = ["low"] * 40 + ["medium"] * 40
    rng = np.random.default_rng(2)
    noise = rng.normal(0, 0.5, 80)
    out = _outcomes({
        # learned: clearly cheaper at low, clearly dearer at medium (every sample by 0.3)
        "rf": [1.0] * 40 + list(2.3 + noise[40:]),
        "fixed_lead": [1.3] * 40 + list(2.0 + noise[40:]),
        "reactive": list(1.3 + np.abs(noise[:40])) + [5.0] * 40,
        "oracle": [0.0] * 80,
    }, levels)
    checks = goal_checks(_table(out), out, seed=7).set_index("load_level")
    assert checks.loc["low", "verdict_95"] == "better" and checks.loc["low", "beats_baselines"]
    assert checks.loc["medium", "verdict_95"] == "worse"
    assert checks.loc["medium", "cost_diff"] == pytest.approx(0.3)
    # +0.3 and -0.3 cancel: an interval about 0 narrower than the +-0.25 h margin
    assert checks.loc["all", "verdict_95"] == "equivalent"
    assert -0.25 < checks.loc["all", "diff_low"] < 0 < checks.loc["all", "diff_high"] < 0.25
    strict = goal_checks(_table(out), out, seed=7, margin_h=0.0).set_index("load_level")
    assert strict.loc["all", "verdict_95"] == "within noise"
    # seeded: the same intervals again, and none without the outcomes
    again = goal_checks(_table(out), out, seed=7).set_index("load_level")
    pd.testing.assert_frame_equal(checks, again)
    assert "verdict_95" not in goal_checks(_table(out))
    # outcomes of another run (a policy missing) name the problem and the fix
    with pytest.raises(MirageError, match="same `mirage evaluate` run"):
        goal_checks(_table(out), out[out["policy"] != "rf"], seed=7)


def test_report_states_the_strict_reading(tmp_path):
    levels = ["low"] * 10 + ["medium"] * 10
    out = _outcomes({"lowwin": [0.1] * 10 + [3.0] * 10, "medwin": [0.5] * 10 + [1.0] * 10,
                     "fixed_lead": [0.2] * 10 + [2.0] * 10, "oracle": [0.0] * 20}, levels)
    (tmp_path / "c").mkdir()
    _table(out).to_csv(tmp_path / "c" / "evaluation.csv", index=False)
    out.to_parquet(tmp_path / "c" / "outcomes.parquet", index=False)
    text = build_report(tmp_path, ["c"], seed=1)
    # each level has a learned winner, but not the same one
    assert "beats every baseline on cost in 100% of the 3" in text
    assert "at every load level at once in 0 of 1 settings" in text
    assert "| c | calibrated | 8 | none |" in text


def test_the_block_bootstrap_draws_whole_blocks_of_time_and_widens_dependent_intervals():
    rng = np.random.default_rng(0)
    ids = np.arange(100, 140)  # 40 successive starts: blocks of 4 are ids 100-103, 104-107, ...
    w = resample_weights(ids, 50, rng, block=4)
    assert w.shape == (50, 40)
    # a block is drawn whole: one weight for its 4 samples; 10 blocks drawn per resample
    assert (w.reshape(50, 10, 4) == w.reshape(50, 10, 4)[:, :, :1]).all()
    assert (w.sum(axis=1) == 40).all()
    one = resample_weights(ids, 50, rng, block=1)  # the ordinary bootstrap: 40 draws of one
    assert (one.sum(axis=1) == 40).all() and len(np.unique(one)) > 2
    # blocks are cut in time: a subset of scattered ids keeps its own blocks
    sparse = np.concatenate([np.arange(k * 100, k * 100 + 3) for k in range(12)])
    w = resample_weights(sparse, 20, rng, block=12)
    assert (w[:, 0::3] == w[:, 1::3]).all() and (w[:, 0::3] == w[:, 2::3]).all()
    # 30 successive samples make 3 blocks of 12: shortened to 3 samples, 10 blocks
    w = resample_weights(np.arange(30), 200, rng, block=12)
    assert (w.reshape(200, 10, 3) == w.reshape(200, 10, 3)[:, :, :1]).all()
    assert not (w.reshape(200, 5, 6) == w.reshape(200, 5, 6)[:, :, :1]).all()
    assert block_length(48, 4) == 12 and block_length(0, 4) == block_length(2, 4) == 1
    with pytest.raises(ValueError, match="every_hours"):
        block_length(48, 0)
    # a difference that drifts slowly (12 successive samples alike): one sample at a time takes
    # 240 samples for 240 independent ones; blocks of 12 see the 20 there are
    drift = np.repeat(rng.normal(0.0, 1.0, 20), 12)
    out = _outcomes({"a": list(drift), "b": [0.0] * 240}, ["low"] * 240)
    iid = paired_difference(out, "a", "b", seed=1)
    blocks = paired_difference(out, "a", "b", seed=1, block=12)
    assert (blocks["high"] - blocks["low"]) > 2 * (iid["high"] - iid["low"])
    assert blocks["diff"] == iid["diff"]


def test_the_headline_intervals_take_the_same_blocks():
    from mirage.evaluate.headline import means_with_intervals

    # interruption that drifts slowly: 12 successive samples alike
    rng = np.random.default_rng(3)
    drift = np.abs(np.repeat(rng.normal(1.0, 1.0, 20), 12))
    out = _outcomes({"a": list(drift)}, ["low"] * 240)
    iid = means_with_intervals(out, seed=1).iloc[0]
    blocks = means_with_intervals(out, seed=1, block=12).iloc[0]
    assert blocks["interruption_h"] == iid["interruption_h"]
    width = lambda r: r["interruption_h_high"] - r["interruption_h_low"]  # noqa: E731
    assert width(blocks) > 2 * width(iid)
