import os

import numpy as np
import pytest
from sklearn.base import clone

from policy_budgets import FAST, LEARNED
from mirage.evaluate import outcomes
from mirage.policies import (
    POLICIES, first_submit_by_decide, load_policy, make_policy, save_policy,
)
from mirage.outcomes import cost
from mirage.policies.registry import TORCH_POLICIES


def _mean_cost(policy, data):
    ks = policy.first_submit_all(data)
    x = data.points["x_h"].to_numpy()[data.point_starts() + ks.to_numpy()]
    return cost(x).mean()


@pytest.mark.parametrize("name", LEARNED + ["rf_history"])
def test_learned_policy_beats_reactive_on_validation(fitted, validation, name):
    # The scenario's wait is readable from f_load_h, so the feature models should at least
    # halve the reactive cost; one lead for every load level can only beat it.
    factor = 1.0 if name == "fixed_lead" else 0.5
    assert _mean_cost(fitted[name], validation) < factor * _mean_cost(fitted["reactive"],
                                                                     validation)


def test_average_baseline_uses_the_recent_wait(fitted, validation):
    assert _mean_cost(fitted["average"], validation) < _mean_cost(fitted["reactive"], validation)


def test_oracle_is_never_beaten_on_any_sample(fitted, validation):
    out = outcomes(fitted, validation)
    per_sample = out.pivot(index="sample_id", columns="policy", values="cost")
    assert (per_sample.drop(columns="oracle").ge(per_sample["oracle"] - 1e-12, axis=0)).all().all()
    # and the oracle column agrees with the reference the metrics compute on their own
    np.testing.assert_allclose(out.loc[out.policy == "oracle", "cost"],
                               out.loc[out.policy == "oracle", "oracle_cost"])


@pytest.mark.parametrize("name", sorted(set(POLICIES) | {"rf_history"}))
def test_first_submit_equals_looping_decide(fitted, validation, name):
    policy = fitted[name]
    # two samples: one light, one heavy, so both early and late submits are covered
    ids = validation.sample_ids[:2]
    for sid in ids:
        pts = validation.points[validation.points.sample_id == sid]
        hist = validation.history_for(sid)
        k = policy.first_submit(pts, hist)
        assert k == first_submit_by_decide(policy, pts, hist)
        assert k == policy.first_submit_all(validation.subset([sid])).iloc[0]


# small budgets: determinism does not need a good policy, only a complete training run
DET = {"dqn": {"total_timesteps": 4_000, "learning_starts": 500}, "pg": {"updates": 20},
       "dqn_tuned": {"total_timesteps": 3_000, "learning_starts": 500, "n_blocks": 2},
       "pg_tuned": {"updates": 10, "n_blocks": 2},
       "rf": {"model_params": {"n_estimators": 20}},
       "rf_tuned": {"model_params": {"n_estimators": 20}},
       "xgb": {"model_params": {"n_estimators": 30}},
       "xgb_tuned": {"model_params": {"n_estimators": 30}}}


@pytest.mark.parametrize("name", LEARNED)
def test_same_seed_same_decisions_also_when_rebuilt_from_get_params(train, validation, name):
    params = DET.get(name, FAST.get(name, {}))
    a = make_policy(name, **params).fit(train, seed=3)
    # scikit-learn's convention: the constructor arguments alone rebuild the policy
    b = type(a)(**a.get_params()).fit(train, seed=3)
    assert b.get_params() == a.get_params()
    assert a.first_submit_all(validation).equals(b.first_submit_all(validation))


@pytest.mark.parametrize("name", sorted(set(POLICIES) | {"rf_history"}))
def test_save_load_round_trip(fitted, validation, tmp_path, name):
    policy = fitted[name]
    suffix = ".pt" if name in TORCH_POLICIES else ".joblib"
    path = save_policy(policy, tmp_path / f"{name}{suffix}")
    again = load_policy(path)
    assert again.first_submit_all(validation).equals(policy.first_submit_all(validation))


def test_fixed_lead_picks_the_cheapest_lead_of_its_sweep(fitted):
    fl = fitted["fixed_lead"]
    best = fl.sweep_.loc[fl.sweep_["cost"].idxmin()]
    assert fl.lead_h_ == best["lead_h"]
    assert len(fl.sweep_) == len(fl.leads_)


def test_tuned_threshold_comes_from_the_sweep(fitted):
    for name in ("rf_tuned", "xgb_tuned"):
        p = fitted[name]
        best = p.threshold_sweep_.loc[p.threshold_sweep_["cost_ratio"].idxmin()]
        assert (p.threshold_, p.gate_) == (best["threshold"], best["gate"])
        assert set(p.threshold_sweep_["gate"]) == {False, True}  # the samples carry the plan
    assert fitted["rf"].threshold_ == -0.5
    for name in ("dqn_tuned", "pg_tuned"):
        p = fitted[name]
        best = p.threshold_sweep_.loc[p.threshold_sweep_["cost_ratio"].idxmin()]
        assert (p.threshold_, p.gate_) == (best["threshold"], best["gate"])
    assert fitted["dqn"].threshold_ == fitted["pg"].threshold_ == 0.0


def test_quantile_level_is_the_newsvendor_ratio():
    assert make_policy("quantile", c_I=1.0, c_O=0.5).newsvendor_tau() == pytest.approx(2 / 3)
    assert make_policy("quantile", c_I=1.0, c_O=1.0).newsvendor_tau() == pytest.approx(0.5)


def test_unknown_policy_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="reactive"):
        make_policy("nope")


def test_policies_never_submit_while_pending_except_learned_models(fitted, validation):
    # lead rules need a running predecessor; this guards the NaN comparisons
    pending = validation.points[~validation.points.pred_running.astype(bool)]
    for name in ("average", "fixed_lead", "plan_lead", "quantile", "reactive"):
        assert not fitted[name].submit_mask(pending, None).any()


def test_quantile_tuning_picks_the_best_cross_fitted_grid_point(fitted):
    q = fitted["quantile"]
    sweep = q.tune_sweep_
    floors = sweep[["floor_h", "floor_gate"]].drop_duplicates()
    assert len(floors) in (2, 3) and 0.0 in set(sweep["floor_h"])
    assert set(sweep["gate"]) == {False, True}  # the synthetic samples carry the plan
    margins, caps, windows = q.grids()
    per_floor = sum(len(margins) if cap > 0 else 1 for cap in caps)  # cap 0: no margins
    assert len(sweep) == len(windows) * 2 * len(floors) * per_floor
    best = sweep.loc[sweep["cost_ratio"].idxmin()]
    assert (q.window_h_, q.floor_h_, q.margin_h_, q.cap_h_, q.gate_, q.floor_gate_) == (
        best["window_h"], best["floor_h"], best["margin_h"], best["cap_h"], best["gate"],
        best["floor_gate"])


def test_quantile_lead_is_clipped_between_floor_and_cap(train, validation):
    q = make_policy("quantile", tune=False, window_h=None).fit(train, seed=0)
    pts = validation.points
    running = pts["pred_running"].to_numpy(dtype=bool)
    rem = pts["pred_remaining_h"].to_numpy(dtype=float, na_value=np.nan)
    q.floor_h_, q.cap_h_ = 1.0, 3.0
    q.margin_h_ = 1e6   # lead = cap
    np.testing.assert_array_equal(q.submit_mask(pts), running & (np.nan_to_num(rem, nan=99) <= 3.0))
    q.margin_h_ = -1e6  # lead = floor
    np.testing.assert_array_equal(q.submit_mask(pts), running & (np.nan_to_num(rem, nan=99) <= 1.0))


def test_quantile_window_restricts_training_rows(train, monkeypatch):
    from sklearn.ensemble import HistGradientBoostingRegressor
    seen = []
    orig = HistGradientBoostingRegressor.fit
    monkeypatch.setattr(HistGradientBoostingRegressor, "fit",
                        lambda self, X, y, **kw: (seen.append(len(y)), orig(self, X, y, **kw))[1])
    make_policy("quantile", tune=False, window_h=2.0).fit(train, seed=0)
    rem = train.points["pred_remaining_h"].to_numpy(dtype=float, na_value=np.nan)
    running = train.points["pred_running"].to_numpy(dtype=bool)
    assert seen == [int((running & (np.nan_to_num(rem, nan=99) <= 2.0)).sum())]


def test_plan_lead_submits_only_where_the_plan_starts_the_successor_after_the_end(fitted,
                                                                                  validation):
    p = fitted["plan_lead"]
    pts = validation.points
    mask = p.submit_mask(pts)
    rem = pts["pred_remaining_h"].to_numpy(dtype=float, na_value=np.nan)
    assert mask.any()
    assert (pts["f_plan_wait_h"].to_numpy()[mask] >= rem[mask]).all()
    assert (rem[mask] <= p.lead_h_).all()
    best = p.sweep_.loc[p.sweep_["cost"].idxmin()]
    assert p.lead_h_ == best["lead_h"]


def test_plan_lead_names_the_missing_plan_column(validation):
    from mirage.outcomes import SampleSet

    data = SampleSet(validation.samples, validation.points.drop(columns="f_plan_wait_h"))
    with pytest.raises(KeyError, match="f_plan_wait_h"):
        make_policy("plan_lead").fit(data)


def test_quantile_floor_and_plan_veto_decompose_the_lead(train, validation):
    from mirage.policies.baselines import plan_allows

    q = make_policy("quantile", tune=False, window_h=None).fit(train, seed=0)
    pts = validation.points
    pred = q.predict_wait(pts)
    running = pts["pred_running"].to_numpy(dtype=bool)
    rem = np.nan_to_num(pts["pred_remaining_h"].to_numpy(dtype=float, na_value=np.nan), nan=99)
    allow = plan_allows(pts)
    q.margin_h_, q.cap_h_, q.floor_h_ = 0.0, 4.0, 0.5
    model = running & (rem <= np.minimum(pred, 4.0))
    floor = running & (rem <= 0.5)
    q.gate_, q.floor_gate_ = True, False
    np.testing.assert_array_equal(q.submit_mask(pts), (model & allow) | floor)
    q.gate_, q.floor_gate_ = False, True
    np.testing.assert_array_equal(q.submit_mask(pts), model | (floor & allow))
    q.cap_h_ = 0.0  # the model's lead off: only the (vetoed) floor submits early
    np.testing.assert_array_equal(q.submit_mask(pts)[rem > 0], (floor & allow)[rem > 0])


def test_torch_runs_one_code_path_on_every_x86_cpu():
    # MKL and ATen pick their kernels by instruction set; mirage.policies pins one path of each
    # before torch loads (measured: other DQN and REINFORCE fits otherwise), unless the user set
    # one; the optimisers take fused Adam (its own IEEE sqrt, not MKL's vector sqrt)
    import subprocess
    import sys

    code = ("import os, mirage.policies, torch; torch.ones(2) @ torch.ones(2); "
            "print(os.environ['MKL_CBWR'], torch.backends.cpu.get_cpu_capability())")
    pinned = ("MKL_CBWR", "ATEN_CPU_CAPABILITY")
    env = {k: v for k, v in os.environ.items() if k not in pinned}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["COMPATIBLE", "AVX2"], out.stderr
    env.update(MKL_CBWR="AUTO", ATEN_CPU_CAPABILITY="default")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["AUTO", "DEFAULT"], out.stderr

    from mirage.policies.neural import adam, mlp
    assert adam(mlp(3, 2).parameters(), 1e-3).defaults["fused"] is True


def test_direct_forward_is_the_nets_forward_bit_for_bit_and_follows_its_training():
    import torch

    from mirage.policies.neural import adam, direct_forward, mlp

    torch.manual_seed(0)
    net = mlp(7, 2)
    fwd = direct_forward(net)
    opt = adam(net.parameters(), 1e-2)
    x, one = torch.randn(64, 7), torch.randn(7)
    for _ in range(3):
        with torch.no_grad():
            assert torch.equal(fwd(x), net(x)) and torch.equal(fwd(one), net(one))
        a, b = fwd(x), net(x)  # with autograd: the same gradients
        ga = torch.autograd.grad(a.square().mean(), list(net.parameters()))
        gb = torch.autograd.grad(b.square().mean(), list(net.parameters()))
        assert all(torch.equal(u, v) for u, v in zip(ga, gb))
        opt.zero_grad()
        net(x).square().mean().backward()
        opt.step()  # in place: the function reads the updated parameters
    with pytest.raises(TypeError, match="Linear and ReLU"):
        direct_forward(torch.nn.Sequential(torch.nn.Tanh()))


@pytest.mark.parametrize("tuned,base,params", [
    ("rf_tuned", "rf", {"model_params": {"n_estimators": 20}}),
    ("dqn_tuned", "dqn", {"total_timesteps": 3_000, "learning_starts": 500}),
    ("pg_tuned", "pg", {"updates": 10}),
])
def test_a_tuned_policy_taking_its_untuned_twins_final_fit_decides_the_same(
        train, validation, tmp_path, tuned, base, params):
    """Tuning cross-fits a threshold, then fits the untuned policy's very model again: taking
    that model (mirage fit does, where both are fitted, from the twin's saved file) must
    change no decision."""
    from mirage.policies.registry import final_fit_mismatch

    suffix = ".pt" if base in TORCH_POLICIES else ".joblib"
    twin = load_policy(save_policy(make_policy(base, **params).fit(train, seed=3),
                                   tmp_path / f"{base}{suffix}"))
    own = make_policy(tuned, n_blocks=2, **params).fit(train, seed=3)
    shared = make_policy(tuned, n_blocks=2, **params)
    assert final_fit_mismatch(shared, twin) == []
    shared.fit(train, seed=3, final_from=twin)
    assert (shared.first_submit_all(validation) == own.first_submit_all(validation)).all()
    assert shared.submit_mask(validation.points).tolist() == own.submit_mask(validation.points).tolist()
    # another setting than tuning's: not the same model, so not taken
    other = {**params, "c_O": 0.25}
    assert final_fit_mismatch(make_policy(tuned, **other), twin) == ["c_O"]


def test_a_tuned_forest_cross_fits_on_its_own_budget_and_still_shares_the_final_fit(train):
    """tune_model_params sizes only the cross-fitted models that choose the threshold; the
    final model keeps model_params, so the untuned twin's fit is still the final one."""
    from mirage.policies.registry import final_fit_mismatch
    from mirage.policies.trees import RegressorPolicy

    class Recorded(RegressorPolicy):  # the real fits, with the size of each model recorded
        def _fit_model(self, data, seed, overrides=None):
            model = super()._fit_model(data, seed, overrides)
            self.__dict__.setdefault("sizes", []).append(model.n_estimators)
            return model

    tuned = Recorded(kind="rf", tune_threshold=True, n_blocks=2, n_jobs=1,
                     model_params={"n_estimators": 12}, tune_model_params={"n_estimators": 3})
    tuned.fit(train, seed=3)
    assert tuned.sizes == [3, 3, 12]
    twin = make_policy("rf", n_jobs=1, model_params={"n_estimators": 12}).fit(train, seed=3)
    assert final_fit_mismatch(tuned, twin) == []
    shared = Recorded(**tuned.get_params()).fit(train, seed=3, final_from=twin)
    assert shared.sizes == [3, 3] and shared.model_ is twin.model_
    assert shared.threshold_ == tuned.threshold_


def test_mirage_fit_shares_the_final_fit_only_with_a_matching_twin(synth, tmp_path):
    import json
    import subprocess
    import sys

    samples = tmp_path / "samples"
    synth.save(samples)

    def fit(*args):
        return subprocess.run([sys.executable, "-m", "mirage", "fit", *args, "--samples",
                               str(samples), "--chain-nodes", "8", "--seed", "3"],
                              capture_output=True, text=True)

    budgets = json.dumps({"rf": {"model_params": {"n_estimators": 10}},
                          "rf_tuned": {"model_params": {"n_estimators": 10}, "n_blocks": 2}})
    res = fit("rf", "rf_tuned", "--params", budgets, "--out", str(tmp_path / "rf"),
              str(tmp_path / "rf_tuned"))
    assert res.returncode == 0, res.stderr
    info = json.loads((tmp_path / "rf_tuned" / "fit.json").read_text())
    assert info["final_model_from"] == "rf"
    # --final-from a model of another seed is refused, naming what differs
    res = subprocess.run([sys.executable, "-m", "mirage", "fit", "rf_tuned", "--samples",
                          str(samples), "--chain-nodes", "8", "--seed", "4", "--final-from",
                          str(tmp_path / "rf"), "--out", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "seed 3 here 4" in res.stderr


def test_fit_and_evaluate_read_the_history_only_for_a_policy_that_reads_it(synth, tmp_path):
    import json

    from mirage.cli import main

    samples, models = tmp_path / "samples", tmp_path / "models"
    synth.save(samples)
    history = samples / "history.npz"
    readable = history.read_bytes()

    def fit(*policies, params, out):
        for nodes in (1, 8):
            assert main(["fit", *policies, "--samples", str(samples), "--chain-nodes", str(nodes),
                         "--seed", "3", "--params", params, "--out",
                         *[str(models / f"n{nodes}" / p) for p in out]]) == 0

    evaluate = ["evaluate", "--run", "calibrated", str(samples), str(models),
                "--policies", "reactive", "rf", "--out-dir", str(tmp_path / "eval")]
    compact = json.dumps({"rf": {"model_params": {"n_estimators": 4}}})
    wide = json.dumps({"features": "history", "model_params": {"n_estimators": 4}})

    history.write_bytes(b"not an npz")  # reading it fails from here on
    # the compact policies neither fit nor evaluate on it
    fit("reactive", "rf", params=compact, out=["reactive", "rf"])
    assert main(evaluate) == 0
    # a history model reads it, when it is fitted and when it is evaluated (numpy refuses the
    # unreadable file as pickled data)
    with pytest.raises(ValueError, match="pickled"):
        fit("rf", params=wide, out=["rf"])
    history.write_bytes(readable)
    fit("rf", params=wide, out=["rf"])
    assert main(evaluate) == 0
    history.write_bytes(b"not an npz")
    with pytest.raises(ValueError, match="pickled"):
        main(evaluate)


def _constructor_args(policy) -> set[str]:
    import inspect

    if type(policy).__init__ is object.__init__:  # no parameters (reactive)
        return set()
    sig = inspect.signature(type(policy).__init__).parameters
    assert not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.values()), (
        "scikit-learn's convention: every parameter is named in the constructor")
    return {n for n in sig if n != "self"}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_get_params_holds_every_constructor_argument(name):
    policy = make_policy(name)
    assert set(policy.get_params()) == _constructor_args(policy)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_fitted_attributes_are_set_only_by_fit(name):
    policy = make_policy(name)
    before = {k for k in vars(policy) if k.endswith("_") and not k.startswith("_")}
    assert not before, f"{name} sets {sorted(before)} before fit"


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_params_round_trip_through_set_params_and_sklearn_clone(name):
    policy = make_policy(name)
    params = policy.get_params()
    assert params == policy.get_params(deep=True)
    # each constructor argument is kept as given, as an attribute of its name
    assert all(getattr(policy, k) is v for k, v in params.items())
    copy = clone(policy)
    assert type(copy) is type(policy) and copy is not policy
    assert copy.get_params() == params and copy.name == policy.name
    assert not [k for k in vars(copy) if k.endswith("_") and not k.startswith("_")]
    key = sorted(params)[0] if params else None
    if key is not None:
        assert policy.set_params(**{key: params[key]}) is policy
        assert policy.get_params() == params
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        policy.set_params(nope=1)


def test_set_params_changes_what_fit_does(train):
    rule = make_policy("fixed_lead", tune=True).fit(train, seed=0)
    rule.set_params(tune=False, lead_h=3.0)
    assert rule.fit(train, seed=0).lead_h_ == 3.0
    # one job: a forest's threads sum the trees' predictions in any order
    fitted = make_policy("rf", n_jobs=1, model_params={"n_estimators": 5}).fit(train, seed=0)
    copy = clone(fitted)
    assert not hasattr(copy, "model_") and hasattr(fitted, "model_")
    np.testing.assert_array_equal(copy.fit(train, seed=0).predict(train.points),
                                  fitted.predict(train.points))


def test_a_bad_setting_is_refused_by_fit_naming_it(train):
    policy = make_policy("rf", features="pixels")  # kept as given until fit
    assert policy.features == "pixels"
    with pytest.raises(ValueError, match="features must be one of"):
        policy.fit(train, seed=0)


def test_an_unfitted_lead_rule_submits_at_its_constructor_lead(validation):
    # the live provisioner runs `--policy fixed_lead --policy-param lead_h=2` untrained
    pts = validation.points
    rule = make_policy("fixed_lead", lead_h=2.0)
    rem = pts["pred_remaining_h"].to_numpy(dtype=float, na_value=np.nan)
    expect = pts["pred_running"].to_numpy(dtype=bool) & (np.nan_to_num(rem, nan=np.inf) <= 2.0)
    assert np.array_equal(rule.submit_mask(pts), expect)
