"""The backfill strategies (mirage.sim.backfill) on seeded random workloads: what each one
promises, checked on every job.

The workloads have priority by age only (so priority order is submit order), exact limits
(every job runs to its limit, so a reservation made from limits is the real schedule), one
user without limits, no dependencies and a constant capacity.
"""

from __future__ import annotations

import numpy as np
import pytest

from mirage.sim import replay
from mirage.sim.backfill import (STRATEGIES, ConservativeBackfill, EasyBackfill, NoBackfill,
                                 SlurmNodeBackfill, strategy_for)
from mirage.sim.cluster import BACKFILL_MODES, Backfill

from .scenarios import make_cluster, make_table

NODES = 8
SEEDS = range(12)


def _workload(seed: int, n: int = 40) -> list[dict]:
    """``n`` jobs, one submitted every 1-9 minutes (no ties), 1-8 nodes, 5-120 minutes each (= limit)."""
    rng = np.random.default_rng(seed)
    submits = np.cumsum(rng.integers(1, 10, size=n))
    return [{"submit": int(s), "run": int(rng.integers(5, 121)),
             "nodes": int(rng.integers(1, NODES + 1))} for s in submits]


def _starts(jobs: list[dict], mode: str) -> np.ndarray:
    """Simulated start (seconds) of each job, in the order of ``jobs`` (submit order)."""
    tab = make_table(jobs)
    st = replay(tab, make_cluster(NODES, mode=mode), int(tab.submit.min()) - 1)
    by_id = {tab.job_id[i]: int(st[i]) for i in range(len(tab))}
    return np.array([by_id[str(k)] for k in range(len(jobs))])


def _overtaken(starts: np.ndarray) -> bool:
    """Whether some job started before a job submitted ahead of it."""
    return bool((np.diff(starts) < 0).any())


def _delayed_by_later_jobs(jobs: list[dict], mode: str) -> bool:
    """Whether some job starts later than it does when the jobs submitted after it are left
    out (a later job took nodes its reservation needed)."""
    full = _starts(jobs, mode)
    for k in range(1, len(jobs)):
        if full[k - 1] > _starts(jobs[:k], mode)[k - 1]:
            return True
    return False


@pytest.mark.parametrize("seed", SEEDS)
def test_no_backfill_is_strict_fcfs(seed):
    starts = _starts(_workload(seed), "none")
    assert (starts >= 0).all()
    assert not _overtaken(starts), "mode none let a later job start before an earlier one"


def test_the_random_workloads_need_backfill_to_be_told_apart():
    # EASY and conservative do let later jobs overtake on these workloads, so the FCFS test
    # above checks something
    assert any(_overtaken(_starts(_workload(seed), "easy")) for seed in SEEDS)
    assert any(_overtaken(_starts(_workload(seed), "conservative")) for seed in SEEDS)


@pytest.mark.parametrize("seed", SEEDS[:6])
def test_conservative_never_delays_an_earlier_job(seed):
    # every queued job holds a reservation; a backfilled job may take none of its nodes
    assert not _delayed_by_later_jobs(_workload(seed, n=25), "conservative")


def test_easy_protects_only_the_first_reservation():
    # on the same workloads EASY lets a backfilled job delay some job behind the first
    assert any(_delayed_by_later_jobs(_workload(seed, n=25), "easy") for seed in SEEDS[:6])


def test_every_mode_of_the_description_has_a_strategy():
    assert set(STRATEGIES) == set(BACKFILL_MODES)
    assert isinstance(strategy_for(Backfill(mode="none")), NoBackfill)
    assert isinstance(strategy_for(Backfill(mode="easy")), EasyBackfill)
    assert isinstance(strategy_for(Backfill(mode="conservative")), ConservativeBackfill)
    slurm = Backfill(mode="conservative", planner="slurm", whole_node=True,
                     window_rounding="slurm")
    assert isinstance(strategy_for(slurm), SlurmNodeBackfill)
    assert not NoBackfill.passes and EasyBackfill.passes
