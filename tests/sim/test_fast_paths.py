"""The fast scheduling passes and the what-if reuse give exactly what the reference passes give.

The reference (``reference_engine.py``) is the engine's passes as they were before the speed work.
The heavy case is a synthetic ls6 trace in a loaded period (about 150-230 jobs queued), where a
what-if probe waits more than a day: the setting the speed work was for.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from mirage.sim import SERVICE_USER, JobTable, load_cluster, to_seconds, warm_start
from mirage.sim import follow
from mirage.sim.whatif import clear_reuse, what_if

from .scenarios import T0, make_cluster, make_table
from .reference_engine import reference_replay, reference_what_if
from .test_warmstart_whatif import _random_jobs

DAY = 86400


@pytest.fixture(scope="module")
def heavy_table():
    from mirage.sim.synth import synthesize

    return JobTable.from_frame(synthesize("ls6", start="2022-12-20", days=70, seed=20232))


@pytest.mark.parametrize("mode", ["conservative", "easy"])
def test_replay_of_a_loaded_window_equals_reference(heavy_table, mode):
    prof = load_cluster("ls6")
    if mode != "conservative":
        prof = prof.with_(backfill={"mode": mode})
    t0, t1 = "2023-01-19", "2023-01-21T12:00"
    fast = warm_start(heavy_table, prof, t0, record=True)
    fast.run_until(to_seconds(t1))
    ref = reference_replay(heavy_table, prof, t0, t1)
    assert (ref >= 0).sum() > 300
    np.testing.assert_array_equal(fast.trace_start, ref)


def test_compat_replay_equals_reference(heavy_table):
    from mirage.sim import compat_cluster

    prof = compat_cluster("ls6")
    t0, t1 = "2023-01-18", "2023-01-22"
    fast = warm_start(heavy_table, prof, t0, record=True)
    fast.run_until(to_seconds(t1))
    np.testing.assert_array_equal(fast.trace_start, reference_replay(heavy_table, prof, t0, t1))


@pytest.mark.parametrize("nodes,points,every", [(1, 24, 1), (8, 10, 1)])
def test_whatif_sweep_in_a_loaded_window_equals_reference(heavy_table, nodes, points, every):
    """What generate.py does: a predecessor queued at T, a what-if every 10 minutes, each from a
    snapshot of the advancing base; with reuse the queries follow one another."""
    prof = load_cluster("ls6")
    t_pred = to_seconds("2023-01-22")
    base = warm_start(heavy_table, prof, t_pred - DAY, record=True)
    base.insert_job(t_pred, nodes, 2880 * 60, user=SERVICE_USER)
    clear_reuse()
    follow.STATS.clear()
    waits = []
    for k in range(points):
        t = t_pred + 600 * every * k
        base.run_until(t)
        snap = base.snapshot()
        fast = what_if(snap, t, nodes, 2880, SERVICE_USER)
        assert fast == reference_what_if(snap, t, nodes, 2880, SERVICE_USER), (k, t)
        # the snapshot is reusable and a plain (not reusing) query agrees
        assert what_if(snap, t, nodes, 2880, SERVICE_USER, reuse=False) == fast
        waits.append((fast - t) / 3600)
    clear_reuse()
    assert min(waits) > 12  # a loaded queue: every probe waits long
    assert follow.STATS["answered"] >= points // 3  # and many queries took the earlier answer


@pytest.mark.parametrize("mode", ["easy", "conservative"])
def test_whatif_reuse_on_a_small_busy_trace_equals_reference(mode):
    """Per-user limits, recorded priorities, size weight, a short bf_interval and resolution."""
    tab = make_table(_random_jobs(n=400, seed=5, span_min=4000))
    prof = make_cluster(12, mode=mode, interval_s=30, max_jobs=3, w_trace=1.0, w_size=50.0,
                        max_age_s=1800)
    t0 = to_seconds(T0) + 600
    base = warm_start(tab, prof, t0, record=False)
    clear_reuse()
    for k in range(16):
        t = t0 + 300 * k
        base.run_until(t)
        snap = base.snapshot()
        for nodes, lim in ((1, 600), (4, 120)):
            got = what_if(snap, t, nodes, lim)
            assert got == reference_what_if(snap, t, nodes, lim), (k, nodes)
    clear_reuse()


# the backfill pass's exact shortcuts (Follower.read's shallow replay, the rounded end)
def test_rounded_end_formula_equals_ceiling_form():
    """free_profile rounds a limit-based end up to now + a multiple of the resolution as
    ``exp + (now - exp) % res``; the same integer as the ceiling form it replaced."""
    rng = random.Random(7)
    for _ in range(20000):
        res = rng.choice([1, 30, 60, 600, 7])
        now = rng.randrange(1_600_000_000, 1_700_000_000)
        exp = now + rng.randrange(1, 5 * 86400)
        assert exp + (now - exp) % res == now + -(-(exp - now) // res) * res


def test_reusing_sweep_answers_equal_reference_with_shallow_replay(heavy_table):
    """A reusing sweep (steps inside rank windows may be replayed where the earlier query's
    passes read only jobs ranked ahead of its probe): every answer equals the reference's."""
    prof = load_cluster("ls6")
    t_pred = to_seconds("2023-01-22")
    base = warm_start(heavy_table, prof, t_pred - DAY, record=True)
    base.insert_job(t_pred, 1, 2880 * 60, user=SERVICE_USER)
    clear_reuse()
    follow.STATS.clear()
    for k in range(12):
        t = t_pred + 600 * k
        base.run_until(t)
        snap = base.snapshot()
        assert what_if(snap, t, 1, 2880, SERVICE_USER) == reference_what_if(
            snap, t, 1, 2880, SERVICE_USER), (k, t)
    clear_reuse()
    assert follow.STATS["answered"] >= 3
    assert follow.STATS["shallow"] > 0  # the shortcut under test was taken
