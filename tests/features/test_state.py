"""The reference's 42-number state (mirage.features.state)."""

import numpy as np
import pytest

from mirage.features.state import N_STATE, QUANTILES, STATE_NAMES, quantiles, state_vector


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 64, 301])
def test_quantiles_are_numpys_quantile_bit_for_bit(n):
    rng = np.random.default_rng(n)
    for scale in (1e-3, 1.0, 48.0, 1e4):
        values = rng.random((3, n)) * scale
        values[1] = np.round(values[1], 1)  # ties
        values[2] = 0.0  # the pending queue's elapsed times
        for row in np.vstack([values, -values, np.round(values * 3600) / 3600]):
            ref = np.quantile(row, QUANTILES)
            got = np.array(quantiles(row.tolist()))
            assert got.tobytes() == ref.tobytes()  # signed zeros too
        ints = rng.integers(0, 10**9, n)  # the simulator's epoch-second differences, in hours
        assert np.array(quantiles((ints / 3600).tolist())).tobytes() == np.quantile(ints / 3600, QUANTILES).tobytes()


def test_state_vector_reads_rows_and_arrays_alike_and_keeps_numpys_nan_rules():
    now = 10 * 3600
    pending = [(now - 3600, 2, 7200), (now - 7200, 4, 3600), (now - 60, 1, 60)]
    running = [(now - 5 * 3600, now - 3600, 8, 48 * 3600), (now - 7, now - 3, 1, 600)]
    a = state_vector(now, np.array(pending, dtype=np.float64), np.array(running, dtype=np.float64))
    assert a.tobytes() == state_vector(now, pending, running).tobytes()
    nan = np.array(pending, dtype=np.float64)
    nan[1, 2] = np.nan  # a limit squeue could not tell
    v = dict(zip(STATE_NAMES, state_vector(now, nan, np.zeros((0, 4))).tolist()))
    assert np.isnan(v["pending_limit_h_max"]) and v["pending_wait_h_max"] == 2.0
    assert v["pending_elapsed_h_max"] == 0.0


def test_state_vector_by_hand():
    now = 10 * 3600
    # pending: (submit, nodes, limit_s); running: (submit, start, nodes, limit_s)
    pending = np.array([[now - 3600, 2, 7200], [now - 7200, 4, 3600]])
    running = np.array([[now - 5 * 3600, now - 3600, 8, 48 * 3600]])
    v = state_vector(now, pending, running, pred=(48.0, 8, 1.0, 2.0), succ=(48.0, 8, 0.0, 0.0))
    assert v.shape == (N_STATE,) and v.dtype == np.float32
    s = dict(zip(STATE_NAMES, v.tolist()))
    assert (s["pending_count"], s["pending_nodes"]) == (2, 6)
    assert (s["pending_limit_h_min"], s["pending_limit_h_q50"], s["pending_limit_h_max"]) == (1, 1.5, 2)
    assert (s["pending_wait_h_min"], s["pending_wait_h_q25"], s["pending_wait_h_max"]) == (1, 1.25, 2)
    assert s["pending_elapsed_h_max"] == 0
    assert (s["running_count"], s["running_nodes"], s["running_limit_h_q75"]) == (1, 8, 48)
    assert (s["running_wait_h_min"], s["running_elapsed_h_max"]) == (4, 1)
    assert (s["pred_wait_h"], s["pred_elapsed_h"], s["succ_nodes"]) == (1, 2, 8)
    empty = state_vector(now, np.zeros((0, 3)), np.zeros((0, 4)))
    assert not empty.any()
