"""Time-ordered cross-fitting (mirage.policies.tuning), shared by every tuned policy."""

import numpy as np
import pytest

from mirage.outcomes import cost, mask_outcomes
from mirage.policies.tuning import best_threshold, cost_ratio, cross_fit, sweep, time_blocks


def test_blocks_are_consecutive_in_time_and_cover_every_sample(train):
    blocks = time_blocks(train, 4)
    assert len(blocks) == 4
    assert sorted(np.concatenate(blocks)) == sorted(train.sample_ids)
    start = train.samples.set_index("sample_id")["sample_start"]
    for early, late in zip(blocks, blocks[1:]):
        assert start.loc[early].max() <= start.loc[late].min()


def test_a_block_is_never_scored_by_a_model_that_saw_it(train):
    seen = []

    def fit_score(fit_part, held):
        seen.append((set(fit_part.sample_ids), set(held.sample_ids)))
        return np.zeros(len(held.points))

    blocks = cross_fit(train, 3, fit_score)
    assert len(blocks) == len(seen) == 3
    for fitted_on, scored in seen:
        assert not fitted_on & scored
        assert fitted_on | scored == set(train.sample_ids)
    for b, (_, scored) in zip(blocks, seen):
        assert set(b.data.sample_ids) == scored and len(b.score) == len(b.data.points)


def test_every_scores_every_nth_held_out_sample_and_fits_on_all_the_others(train):
    seen = []

    def fit_score(fit_part, held):
        seen.append((set(fit_part.sample_ids), list(held.sample_ids)))
        return np.zeros(len(held.points))

    blocks = cross_fit(train, 2, fit_score, every=3)
    start = train.samples.set_index("sample_id")["sample_start"]
    for block_ids, (fitted_on, scored), b in zip(time_blocks(train, 2), seen, blocks):
        in_time = sorted(block_ids, key=lambda s: (start.loc[s], s))
        assert sorted(scored) == sorted(in_time[::3])  # every 3rd of the block, in time order
        assert fitted_on == set(train.sample_ids) - set(block_ids)  # never the skipped ones
        assert sorted(b.data.sample_ids) == sorted(scored) and len(b.score) == len(b.data.points)
    with pytest.raises(ValueError, match="every must be a positive"):
        cross_fit(train, 2, fit_score, every=0)


def test_cost_ratio_is_the_mean_of_block_cost_over_block_reactive_cost(train):
    blocks = cross_fit(train, 2, lambda fit_part, held: np.zeros(len(held.points)))
    always = lambda b: np.ones(len(b.data.points), bool)  # noqa: E731 - submit at k = 0
    expected = np.mean([
        cost(mask_outcomes(b.data, always(b))).mean()
        / cost(mask_outcomes(b.data, np.zeros(len(b.data.points), bool))).mean()
        for b in blocks])
    assert cost_ratio(blocks, always) == pytest.approx(expected)
    assert cost_ratio(blocks, lambda b: np.zeros(len(b.data.points), bool)) == pytest.approx(1.0)


def test_sweep_takes_the_cheapest_candidate_and_the_first_on_ties(train):
    blocks = cross_fit(train, 2, lambda fit_part, held: held.points["k"].to_numpy(float))
    cands = [{"k": 10_000}, {"k": 20_000}, {"k": 0}]  # the first two are both reactive
    best, table = sweep(blocks, cands, lambda b, c: b.score >= c["k"])
    assert list(table["k"]) == [10_000, 20_000, 0]
    assert best == (cands[0] if table["cost_ratio"].iloc[0] <= table["cost_ratio"].iloc[2]
                    else cands[2])
    assert table["cost_ratio"].iloc[0] == table["cost_ratio"].iloc[1] == pytest.approx(1.0)


def test_too_few_blocks_is_refused(train):
    with pytest.raises(ValueError, match="at least 2 blocks"):
        time_blocks(train, 1)


def test_best_threshold_breaks_ties_towards_the_later_submit(train):
    blocks = cross_fit(train, 2, lambda fit_part, held: held.points["k"].to_numpy(float))
    # every threshold above the last k is reactive: they tie, and the highest is kept
    big = [10_000.0, 20_000.0, 30_000.0]
    t, gate, table = best_threshold(blocks, big, allows=None)
    assert not gate and t == 30_000.0 and list(table["threshold"]) == sorted(big, reverse=True)
    # strict compares with >, otherwise >=: at t = 0 that is submitting at k = 1 or at k = 0
    for strict, rule in ((True, lambda b: b.score > 0), (False, lambda b: b.score >= 0)):
        _, _, table = best_threshold(blocks, [0.0], strict=strict, allows=None)
        assert table["cost_ratio"].iloc[0] == pytest.approx(cost_ratio(blocks, rule))


def test_gated_threshold_takes_the_veto_only_where_it_pays(train):
    # score = k: threshold t submits from point t on; the veto below forbids every point
    # whose outcome overlaps, so with it every threshold ends at the first point with x >= 0
    blocks = cross_fit(train, 2, lambda fit_part, held: held.points["k"].to_numpy(float))
    thresholds = [0.0, 5.0, 50.0]
    t, gate, table = best_threshold(blocks, thresholds, allows=None)
    assert not gate and set(table["gate"]) == {False} and len(table) == len(thresholds)
    # the default veto is the recorded plan's (the synthetic samples carry it)
    _, _, table = best_threshold(blocks, thresholds)
    assert set(table["gate"]) == {False, True}
    # a veto that allows everything changes nothing: the tie keeps the plain rule
    everywhere = [np.ones(len(b.data.points), bool) for b in blocks]
    t2, gate, table = best_threshold(blocks, thresholds, allows=everywhere)
    assert (t2, gate) == (t, False) and len(table) == 2 * len(thresholds)
    # a veto that forbids exactly the overlapping points beats every plain threshold
    no_overlap = [b.data.points["x_h"].to_numpy() >= 0 for b in blocks]
    _, gate, table = best_threshold(blocks, thresholds, allows=no_overlap)
    assert gate
    best_gated = table.loc[table["gate"], "cost_ratio"].min()
    assert best_gated < table.loc[~table["gate"], "cost_ratio"].min()
