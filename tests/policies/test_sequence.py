"""The neural value models over the history window (mirage.policies.sequence): transformer,
mixture of transformers and REINFORCE on a transformer, on the synthetic scenario (its history
carries the wait in column 0 and a remaining-time clock in column 38)."""

import dataclasses
import inspect

import numpy as np
import pytest

from mirage.outcomes import SampleSet, cost, history_windows
from mirage.policies import first_submit_by_decide, load_policy, make_policy, save_policy
from mirage.policies.tuning import time_blocks

# small budgets: one fit is seconds on one core; the first submits of 10 validation samples
# (~3300 windows) a few more
SMALL = {
    "transformer": {"width": 16, "epochs": 8},
    "moe": {"width": 16, "epochs": 8, "experts": 3},
    "pg_transformer": {"width": 16, "epochs": 8, "updates": 5, "episodes_per_update": 8},
}
TINY = {  # determinism and bookkeeping need a complete run, not a good model
    "transformer": {"width": 8, "epochs": 2},
    "moe": {"width": 8, "epochs": 2, "experts": 2},
    "pg_transformer": {"width": 8, "epochs": 2, "updates": 2, "episodes_per_update": 4},
}
NAMES = list(SMALL)


@pytest.fixture(scope="module")
def val10(validation):
    return validation.subset(validation.sample_ids[:10])


@pytest.fixture(scope="module")
def fitted_small(train):
    return {name: make_policy(name, **SMALL[name]).fit(train, seed=0) for name in NAMES}


def _mean_cost(policy, data):
    ks = policy.first_submit_all(data)
    return cost(data.points["x_h"].to_numpy()[data.point_starts() + ks.to_numpy()]).mean()


def _sample(data, i=0):
    sid = data.sample_ids[i]
    return data.points[data.points.sample_id == sid].reset_index(drop=True), data.history_for(sid)


def _scores(policy, data, n_samples=2):
    out = []
    for i in range(n_samples):
        pts, hist = _sample(data, i)
        out.append(policy.decision_score(pts, history_windows(hist, len(pts))))
    return np.concatenate(out)


@pytest.mark.parametrize("name", NAMES)
def test_learned_sequence_policy_beats_reactive(fitted_small, val10, name):
    reactive = make_policy("reactive")
    assert _mean_cost(fitted_small[name], val10) < 0.5 * _mean_cost(reactive, val10)


@pytest.mark.parametrize("name", NAMES)
def test_prediction_at_a_point_ignores_the_history_after_its_window(fitted_small, validation,
                                                                    name):
    policy = fitted_small[name]
    pts, hist = _sample(validation, 1)
    before = policy.decision_score(pts, history_windows(hist, len(pts)))
    i = len(pts) // 2
    planted = hist.copy()
    planted[i + 144:] = 1e3  # rows after point i's window (rows i .. i + 143)
    after = policy.decision_score(pts, history_windows(planted, len(pts)))
    np.testing.assert_array_equal(after[:i + 1], before[:i + 1])
    assert not np.array_equal(after[i + 1:], before[i + 1:])  # the marker is seen once in view


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_predictions_other_seed_others(train, validation, name):
    a = make_policy(name, **TINY[name]).fit(train, seed=3)
    b = make_policy(name, **TINY[name]).fit(train, seed=3)
    c = make_policy(name, **TINY[name]).fit(train, seed=4)
    np.testing.assert_array_equal(_scores(a, validation), _scores(b, validation))
    assert not np.array_equal(_scores(a, validation), _scores(c, validation))
    assert a.history_ == b.history_


@pytest.mark.parametrize("name", NAMES)
def test_save_load_round_trip(fitted_small, validation, tmp_path, name):
    policy = fitted_small[name]
    path = save_policy(policy, tmp_path / "model.pt")
    again = load_policy(path)
    assert type(again) is type(policy) and again.name == name
    assert again.get_params() == policy.get_params()
    np.testing.assert_array_equal(_scores(again, validation), _scores(policy, validation))
    assert (again.threshold_, again.gate_) == (policy.threshold_, policy.gate_)
    import torch

    assert set(torch.load(path, weights_only=True))  # plain tensors and values only


def _constructor_args(policy) -> set[str]:
    sig = inspect.signature(type(policy).__init__).parameters
    names = {n for n, p in sig.items() if n != "self" and p.kind is not p.VAR_KEYWORD}
    return names | {f.name for f in dataclasses.fields(policy.config_class)}


@pytest.mark.parametrize("name", NAMES + ["transformer_tuned", "moe_tuned"])
def test_get_params_holds_every_constructor_argument_and_nothing_fitted(name):
    policy = make_policy(name)
    assert set(policy.get_params()) == _constructor_args(policy)
    assert not [k for k in vars(policy) if k.endswith("_") and not k.startswith("_")]
    with pytest.raises(TypeError, match="nope"):
        make_policy(name, nope=1)


@pytest.mark.parametrize("name", NAMES)
def test_a_policy_rebuilt_from_its_params_decides_alike(train, validation, name):
    policy = make_policy(name, **TINY[name]).fit(train, seed=3)
    again = type(policy)(**policy.get_params()).fit(train, seed=3)
    assert again.get_params() == policy.get_params()
    np.testing.assert_array_equal(_scores(again, validation), _scores(policy, validation))
    data = validation.subset(validation.sample_ids[:3])
    assert again.first_submit_all(data).equals(policy.first_submit_all(data))


@pytest.mark.parametrize("name", NAMES)
def test_fit_records_device_time_and_training_curve(fitted_small, name):
    p = fitted_small[name]
    assert p.device_ == "cpu" and p.train_seconds_ > 0
    value = [h for h in p.history_ if h["phase"] == "value"]
    assert [h["epoch"] for h in value] == list(range(SMALL[name]["epochs"]))
    assert all(np.isfinite(h["loss"]) for h in value)
    if name == "pg_transformer":
        assert [h["update"] for h in p.history_ if h["phase"] == "pg"] == list(range(5))
    else:
        assert value[-1]["loss"] < value[0]["loss"]


def test_minibatches_gather_only_their_own_windows(train, monkeypatch):
    from mirage.policies import sequence

    sizes = []
    orig = sequence._Windows.batch
    monkeypatch.setattr(sequence._Windows, "batch",
                        lambda self, rows: (sizes.append(len(rows)), orig(self, rows))[1])
    make_policy("transformer", width=8, epochs=1, batch_size=32).fit(train, seed=0)
    assert max(sizes) == 32 and sum(sizes) == 7 * len(train)  # 7 probes per sample, 1 epoch


def test_decide_agrees_with_first_submit(fitted_small, validation):
    policy = fitted_small["transformer"]
    pts, hist = _sample(validation, 0)
    assert policy.first_submit(pts, hist) == first_submit_by_decide(policy, pts, hist)


def test_pg_transformer_starts_from_the_value_rule(train, validation):
    # no policy-gradient update: the logit is init_scale * (predicted x - value_threshold)
    pg = make_policy("pg_transformer", **{**TINY["pg_transformer"], "updates": 0}).fit(
        train, seed=3)
    value = make_policy("transformer", **TINY["transformer"]).fit(train, seed=3)
    np.testing.assert_allclose(_scores(pg, validation), _scores(value, validation) + 0.5,
                               rtol=1e-4, atol=1e-3)


def test_features_both_appends_the_compact_features(train, validation, tmp_path):
    p = make_policy("transformer", features="both", **TINY["transformer"]).fit(train, seed=0)
    assert p.net_.heads[0].in_features == 8 + 4 + len(train.feature_columns)
    again = load_policy(save_policy(p, tmp_path / "m.pt"))
    np.testing.assert_array_equal(_scores(again, validation), _scores(p, validation))
    with pytest.raises(ValueError, match="features"):
        make_policy("transformer", features="compact").fit(train, seed=0)


def test_tuned_threshold_comes_from_the_cross_fit_and_shares_the_final_fit(train, validation):
    from mirage.policies.catalogue import CATALOGUE
    from mirage.policies.registry import final_fit_mismatch

    assert CATALOGUE["transformer_tuned"].tunes == "transformer"
    params = {**TINY["transformer"], "epochs": 1}
    twin = make_policy("transformer", **params).fit(train, seed=3)
    assert (twin.threshold_, twin.gate_) == (-0.5, False)
    tuned = make_policy("transformer_tuned", n_blocks=2, **params)
    assert final_fit_mismatch(tuned, twin) == []
    tuned.fit(train, seed=3, final_from=twin)
    sweep = tuned.threshold_sweep_
    best = sweep.loc[sweep["cost_ratio"].idxmin()]
    assert (tuned.threshold_, tuned.gate_) == (best["threshold"], best["gate"])
    assert tuned.net_ is twin.net_


def test_tune_every_scores_fewer_held_out_samples_and_keeps_the_final_fit(train, monkeypatch):
    from mirage.policies import sequence
    from mirage.policies.registry import final_fit_mismatch, policy_params

    params = {**TINY["transformer"], "epochs": 1}
    twin = make_policy("transformer", **params).fit(train, seed=3)
    tuned = make_policy("transformer_tuned", **policy_params(
        "transformer_tuned", {**params, "n_blocks": 2, "tune_every": 2}, c_I=1.0, c_O=0.5,
        device="cpu"))
    assert tuned.get_params()["tune_every"] == 2
    assert final_fit_mismatch(tuned, twin) == []  # tuning's own setting: the twin's fit serves
    scored = []
    real = sequence.TransformerValue.predict_all
    monkeypatch.setattr(sequence.TransformerValue, "predict_all",
                        lambda self, data: scored.append(len(data)) or real(self, data))
    tuned.fit(train, seed=3, final_from=twin)
    halves = [len(b) for b in time_blocks(train, 2)]
    assert scored == [(n + 1) // 2 for n in halves]
    with pytest.raises(ValueError, match="tune_every"):
        make_policy("transformer_tuned", tune_every=0).fit(train, seed=0)


def test_samples_without_history_are_refused(train):
    bare = SampleSet(train.samples, train.points)
    with pytest.raises(ValueError, match="history"):
        make_policy("transformer", **TINY["transformer"]).fit(bare, seed=0)


def test_history_policy_names_are_the_torch_policies_that_read_the_window():
    # the workflow fits these in their own two-thread jobs (rules/common.smk, TORCH_GROUPS)
    from mirage.policies import HISTORY_POLICY_NAMES
    from mirage.policies.registry import TORCH_POLICIES

    assert {n for n in TORCH_POLICIES if TORCH_POLICIES[n].needs_history} == HISTORY_POLICY_NAMES
