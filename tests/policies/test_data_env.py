import numpy as np
import pytest

from mirage.outcomes import SampleSet, SampleSetError, compact_matrix, history_windows
from mirage.policies.env import ProvisioningEnv, Scaler, TableEpisodes, decisions


def test_sampleset_round_trip(synth, tmp_path):
    synth.save(tmp_path / "s")
    back = SampleSet.load(tmp_path / "s").validate()
    assert back.points.equals(synth.points)
    assert back.samples.equals(synth.samples)
    sid = synth.sample_ids[3]
    np.testing.assert_array_equal(back.history_for(sid), synth.history_for(sid))


def test_sampleset_loads_without_its_history(synth, tmp_path):
    synth.save(tmp_path / "s")
    (tmp_path / "s" / "history.npz").write_bytes(b"not an npz")  # reading it would fail
    back = SampleSet.load(tmp_path / "s", history=False).validate()
    assert back.history is None and back.points.equals(synth.points)
    part = back.split("train")
    assert len(part) == len(synth.split("train")) and part.history is None
    with pytest.raises(SampleSetError, match="no history"):
        back.history_for(synth.sample_ids[0])


def test_history_window_k_ends_at_point_k(synth):
    sid = synth.sample_ids[0]
    H = synth.history_for(sid)
    n = int(synth.samples.set_index("sample_id").loc[sid, "n_points"])
    W = history_windows(H, n)
    assert W.shape == (n, 144, 42)
    np.testing.assert_array_equal(W[5], H[5:149])
    np.testing.assert_array_equal(synth.window(sid, 5), H[5:149])


def test_validate_rejects_a_gap_in_k(synth):
    bad = SampleSet(synth.samples, synth.points.drop(index=5))
    with pytest.raises(SampleSetError):
        bad.validate()


def test_pending_remaining_is_filled_for_models(synth):
    X = compact_matrix(synth.points, synth.feature_columns)
    pending = ~synth.points.pred_running.to_numpy(bool)
    assert np.all(X[pending, 3] == 48.0)


def _env(data, stride=1):
    scaler = Scaler.fit(compact_matrix(data.points, data.feature_columns))
    return ProvisioningEnv(TableEpisodes(data, data.feature_columns, scaler), stride=stride)


def test_env_submit_gives_minus_cost_of_that_point(train):
    env = _env(train)
    env.reset(seed=0, options={"sample_index": 2})
    for _ in range(3):
        _, r, done, _, _ = env.step(0)
        assert r == 0.0 and not done
    _, r, done, _, info = env.step(1)
    x = train.points[train.points.sample_id == train.sample_ids[2]].x_h.to_numpy()[3]
    assert done and info["k"] == 3 and r == pytest.approx(-(max(x, 0) + 0.5 * max(-x, 0)))


def test_env_waiting_to_the_end_is_reactive(train):
    env = _env(train, stride=7)
    env.reset(seed=0, options={"sample_index": 0})
    done, steps = False, 0
    while not done:
        _, r, done, _, info = env.step(0)
        steps += 1
    n = int(train.samples.n_points.iloc[0])
    assert info["forced"] and info["k"] == n - 1
    assert steps == -(-(n - 1) // 7)
    assert info["x_h"] == train.points[train.points.sample_id == train.sample_ids[0]].x_h.iloc[-1]


def test_decisions_count_the_grid_points_of_a_waiting_episode(train):
    # points 0, 6, 12, ... up to the last: a one-point episode has its point, 13 points 3
    assert decisions([1, 6, 7, 12, 13, 14], 6).tolist() == [1, 1, 2, 2, 3, 3]
    cols = train.feature_columns
    ep = TableEpisodes(train, cols, Scaler.fit(compact_matrix(train.points, cols)))
    assert ep.decisions(6).tolist() == decisions(train.samples.n_points.to_numpy(), 6).tolist()
