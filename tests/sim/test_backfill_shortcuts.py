"""The backfill pass's exact shortcuts (engine/freenodes/follow speed work) change no result."""

from __future__ import annotations

import random

from mirage.sim import SERVICE_USER, follow, load_cluster, to_seconds, warm_start
from mirage.sim.whatif import clear_reuse, what_if

from .reference_engine import reference_what_if
from .test_fast_paths import DAY, heavy_table  # noqa: F401 (fixture)


def test_rounded_end_formula_equals_ceiling_form():
    """free_profile rounds a limit-based end up to now + a multiple of the resolution as
    ``exp + (now - exp) % res``; the same integer as the ceiling form it replaced."""
    rng = random.Random(7)
    for _ in range(20000):
        res = rng.choice([1, 30, 60, 600, 7])
        now = rng.randrange(1_600_000_000, 1_700_000_000)
        exp = now + rng.randrange(1, 5 * 86400)
        assert exp + (now - exp) % res == now + -(-(exp - now) // res) * res


def test_reusing_sweep_answers_equal_reference_with_shallow_replay(heavy_table):  # noqa: F811
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
