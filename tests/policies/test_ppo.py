"""PPO (mirage.policies.ppo) on the synthetic samples: repeatable, saved and cloned without
loss, followed by its monitor, and learning to submit before the predecessor ends."""

import numpy as np
import pytest
from sklearn.base import clone

from mirage.policies import load_policy, make_policy, save_policy
from mirage.policies.curves import HeldOut, learning_curve, time_split

SMALL = {"total_timesteps": 8_000}


@pytest.fixture(scope="module")
def small_fit(train):
    return make_policy("ppo", **SMALL).fit(train, seed=5)


def test_a_fit_is_repeatable_and_the_seed_matters(train, validation, small_fit):
    again = make_policy("ppo", **SMALL).fit(train, seed=5)
    np.testing.assert_array_equal(again.decision_score(validation.points),
                                  small_fit.decision_score(validation.points))
    other = make_policy("ppo", **SMALL).fit(train, seed=6)
    assert not np.array_equal(other.decision_score(validation.points),
                              small_fit.decision_score(validation.points))


def test_params_round_trip_and_clone_keeps_the_settings(small_fit):
    params = small_fit.get_params()
    assert params["total_timesteps"] == 8_000 and params["clip_coef"] == 0.2
    copy = clone(small_fit)
    assert copy.get_params() == params and not hasattr(copy, "net_")
    assert copy.set_params(ent_coef=0.05) is copy and copy.ent_coef == 0.05
    tuned = make_policy("ppo_tuned")
    assert tuned.tune_threshold and tuned.name == "ppo_tuned" and small_fit.name == "ppo"


def test_save_and_load_give_the_same_scores_and_keep_only_the_actor(small_fit, validation,
                                                                     tmp_path):
    again = load_policy(save_policy(small_fit, tmp_path / "ppo.pt"))
    np.testing.assert_array_equal(again.decision_score(validation.points),
                                  small_fit.decision_score(validation.points))
    assert again.get_params() == small_fit.get_params()
    assert small_fit.net_[-1].out_features == 1  # the submit logit


def test_the_monitor_follows_the_fit_with_growing_env_steps(train):
    seen = []
    policy = make_policy("ppo", **SMALL)
    policy.fit(train, seed=1, monitor=lambda steps, p: seen.append(
        (steps, p.net_ is not None, len(p.history_))))
    steps = [s for s, _, _ in seen]
    assert len(seen) >= 3 and all(net for _, net, _ in seen)
    assert steps == sorted(steps) and steps[-1] >= SMALL["total_timesteps"]
    rows = policy.history_
    assert [r["update"] for r in rows] == sorted({r["update"] for r in rows})
    assert set(rows[0]) == {"update", "env_steps", "mean_episode_cost", "entropy", "approx_kl",
                            "clipfrac"}
    assert policy.train_seconds_ > 0


def test_ppo_learns_to_beat_reactive_on_later_held_out_samples(train):
    # the synthetic wait is readable from the features: submitting hours early is right
    curve = learning_curve(lambda: make_policy("ppo", total_timesteps=40_000), "ppo", train,
                           seeds=[0])
    reactive, final = curve["reactive_cost"].iloc[0], curve["held_out_cost"].iloc[-1]
    assert curve["held_out_cost"].iloc[0] == pytest.approx(reactive)  # a fresh policy waits
    assert final < 0.5 * reactive
    # the same run without learning stays reactive: the bar above is PPO's doing
    fit_part, held_part = time_split(train)
    frozen = make_policy("ppo", total_timesteps=5_000, learning_rate=0.0).fit(fit_part, seed=0)
    held = HeldOut(held_part)
    assert held.cost_of(frozen.decision_score(held_part.points)) == pytest.approx(reactive)
