import numpy as np
import pandas as pd
import pytest

from mirage.policies import make_policy
from mirage.policies.service import choose_tau, level_service
from policy_budgets import FAST


def _table(rows):
    return pd.DataFrame(rows, columns=["tau", "load_level", "n", "zero_interruption_share",
                                       "mean_overlap_h"])


def test_level_service_counts_every_sample_once():
    x = np.array([-1.0, 0.5, 3.0, -2.0, 20.0, 0.0])
    reactive = np.array([0.5, 1.0, 5.0, 8.0, 30.0, 0.0])  # low, low, medium, medium, heavy, low
    t = level_service(x, reactive).set_index("load_level")
    assert t.loc["all", "n"] == 6 and t.loc[["low", "medium", "heavy"], "n"].sum() == 6
    assert t.loc["low", "zero_interruption_share"] == pytest.approx(2 / 3)
    assert t.loc["medium", "mean_overlap_h"] == pytest.approx(1.0)
    assert t.loc["heavy", "zero_interruption_share"] == 0.0


def test_choose_tau_takes_the_smallest_tau_meeting_the_target_everywhere():
    t = _table([
        (0.7, "low", 50, 0.90, 0.5), (0.7, "medium", 40, 0.60, 1.0),
        (0.9, "low", 50, 0.95, 1.0), (0.9, "medium", 40, 0.85, 3.0),
        (0.95, "low", 50, 0.97, 2.0), (0.95, "medium", 40, 0.90, 5.0),
        (0.95, "heavy", 3, 0.0, 9.0),  # too few samples to count, and over the budget
    ])
    assert choose_tau(t, 0.8, 6.0, 30) == (0.9, True)


def test_choose_tau_falls_back_to_the_best_worst_share_within_budget():
    t = _table([
        (0.7, "low", 50, 0.90, 0.5), (0.7, "medium", 40, 0.50, 1.0),
        (0.9, "low", 50, 0.95, 1.0), (0.9, "medium", 40, 0.70, 3.0),
        (0.99, "low", 50, 0.97, 2.0), (0.99, "medium", 40, 0.79, 7.0),  # over the budget
    ])
    assert choose_tau(t, 0.8, 6.0, 30) == (0.9, False)
    # nothing within the budget: the least overlapping (smallest) tau
    assert choose_tau(t, 0.8, 0.1, 30) == (0.7, False)


def test_choose_tau_judges_the_pooled_row_when_no_level_has_enough_samples():
    t = _table([(0.7, "all", 10, 0.70, 0.2), (0.7, "low", 9, 0.8, 0.2),
                (0.9, "all", 10, 0.85, 0.9), (0.9, "low", 9, 0.9, 0.9)])
    assert choose_tau(t, 0.8, 6.0, 30) == (0.9, True)


def test_fitted_tau_is_the_rule_applied_to_its_own_sweep(fitted):
    p = fitted["service_level"]
    sweep = p.service_sweep_
    assert (p.tau_, p.target_met_) == choose_tau(sweep, p.target_share, p.max_overlap_h,
                                                p.min_level_samples)
    swept = sorted(set(sweep["tau"]))
    assert swept == sorted(p.taus)[:len(swept)]
    assert swept == sorted(p.taus) or (p.target_met_ and swept[-1] == p.tau_)


def test_the_sweep_stops_at_the_first_tau_that_meets_the_target_and_chooses_as_a_full_one(train):
    base = dict(FAST["service_level"], max_overlap_h=48.0)
    p = make_policy("service_level", target_share=0.3, **base).fit(train, seed=0)
    assert p.target_met_ and sorted(set(p.service_sweep_["tau"]))[-1] == p.tau_
    assert p.tau_ < max(p.taus)  # it stopped before the last one
    # every tau it passed fails the target on its own rows, so a full sweep chooses the same
    for tau, rows in p.service_sweep_.groupby("tau"):
        met = choose_tau(rows, 0.3, 48.0, p.min_level_samples)[1]
        assert met == (tau == p.tau_)


def test_a_higher_target_buys_more_uninterrupted_handovers(train, validation):
    base = dict(FAST["service_level"], max_overlap_h=48.0)
    lo = make_policy("service_level", target_share=0.3, **base).fit(train, seed=0)
    hi = make_policy("service_level", target_share=0.99, **base).fit(train, seed=0)
    assert hi.tau_ > lo.tau_

    def share(p):
        ks = p.first_submit_all(validation).to_numpy()
        return (validation.points["x_h"].to_numpy()[validation.point_starts() + ks] <= 0).mean()

    assert share(hi) > share(lo)


def test_bad_service_settings_are_refused_by_fit(train):
    # kept as given by the constructor (scikit-learn's convention), refused before any fitting
    with pytest.raises(ValueError, match="target_share"):
        make_policy("service_level", target_share=1.5).fit(train, seed=0)
    with pytest.raises(ValueError, match="taus"):
        make_policy("service_level", taus=(0.5, 1.0)).fit(train, seed=0)
