"""Hand-built scenarios whose answer is known without a simulator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mirage.sim import replay, to_seconds
from mirage.sim.jobs import SimInputError

from .scenarios import T0, make_cluster, make_table, minutes


def starts(jobs, profile, t0=None):
    tab = make_table(jobs)
    st = replay(tab, profile, t0 if t0 is not None else int(tab.submit.min()) - 1)
    # index order of the table is submit order; map back to the test's ids
    by_id = {tab.job_id[i]: minutes(int(st[i])) for i in range(len(tab))}
    return [by_id[str(k)] for k in range(len(jobs))]


@pytest.mark.parametrize("mode", ["none", "easy", "conservative"])
def test_fifo_full_node_jobs(mode):
    jobs = [{"submit": k, "run": 10, "nodes": 4} for k in range(3)]
    assert starts(jobs, make_cluster(4, mode=mode)) == [0, 10, 20]


def test_whole_node_allocation_and_runtime_capped_at_limit():
    # recorded runtime 90 min but limit 60: it is killed at 60
    jobs = [{"submit": 0, "run": 90, "limit": 60, "nodes": 2}, {"submit": 1, "run": 5, "nodes": 4}]
    tab = make_table(jobs)
    assert tab.run[0] == 60 * 60
    assert starts(jobs, make_cluster(4, mode="none")) == [0, 60]


def _blocking_scenario(c_limit):
    return [
        {"submit": 0, "run": 60, "nodes": 3},  # A runs 0..60
        {"submit": 1, "run": 30, "nodes": 4},  # B needs the whole cluster: waits for A
        {"submit": 2, "run": c_limit, "limit": c_limit, "nodes": 1},  # C: 1 node is free now
    ]


def test_head_of_line_blocking_without_backfill():
    # the main scheduler stops at B; C, behind it, waits although a node is free
    assert starts(_blocking_scenario(30), make_cluster(4, mode="none")) == [0, 60, 90]


@pytest.mark.parametrize("mode", ["easy", "conservative"])
def test_short_job_is_backfilled(mode):
    # C ends (limit 30) before B can start (60): it runs on the idle node at once
    assert starts(_blocking_scenario(30), make_cluster(4, mode=mode)) == [0, 60, 2]


@pytest.mark.parametrize("mode", ["easy", "conservative"])
def test_job_that_would_delay_the_top_reservation_is_not_backfilled(mode):
    # C's limit (120) would hold the node B needs at 60: no backfill, C waits for B
    assert starts(_blocking_scenario(120), make_cluster(4, mode=mode)) == [0, 60, 90]


def test_conservative_protects_every_reservation_easy_only_the_first():
    # A holds 3 of 4 nodes until 100. B (2 nodes, limit 100) is reserved at 100..200. C (4 nodes)
    # can only run once B is done: 200..210. E (1 node, limit 250) fits on the idle node now and
    # does not delay B, but would delay C. EASY reserves only for B, so E starts at once and C
    # waits for E; conservative also protects C, so E waits until C is done.
    jobs = [
        {"submit": 0, "run": 100, "nodes": 3},
        {"submit": 1, "run": 100, "nodes": 2},
        {"submit": 2, "run": 10, "nodes": 4},
        {"submit": 3, "run": 250, "nodes": 1},
    ]
    assert starts(jobs, make_cluster(4, mode="easy")) == [0, 100, 253, 3]
    assert starts(jobs, make_cluster(4, mode="conservative")) == [0, 100, 200, 210]


def test_backfill_interval_defers_backfill_starts():
    # C can only start by backfill; the last pass ran at 1 (when B arrived), so the next may
    # run at 11, not at C's submit
    prof = make_cluster(4, mode="conservative", interval_s=600)
    assert starts(_blocking_scenario(30), prof) == [0, 60, 11]


def test_per_user_running_job_limit():
    jobs = [
        {"submit": 0, "run": 30, "user": "alice"},
        {"submit": 1, "run": 30, "user": "alice"},
        {"submit": 2, "run": 30, "user": "bob"},
    ]
    assert starts(jobs, make_cluster(4, max_jobs=1)) == [0, 30, 2]
    assert starts(jobs, make_cluster(4)) == [0, 1, 2]


def test_per_user_node_limit():
    jobs = [{"submit": 0, "run": 30, "nodes": 2, "user": "a"},
            {"submit": 1, "run": 30, "nodes": 2, "user": "a"}]
    assert starts(jobs, make_cluster(4, max_nodes=3)) == [0, 30]


def test_capacity_change():
    cap = [(to_seconds(T0), 2), (to_seconds(T0) + 3600, 4)]
    jobs = [{"submit": 0, "run": 10, "nodes": 4}, {"submit": 1, "run": 10, "nodes": 2}]
    # the 4-node job cannot run before capacity grows at 60; the 2-node one backfills (10 min)
    assert starts(jobs, make_cluster(4, capacity=cap)) == [60, 1]
    # a capacity drop ahead keeps a long job from starting into it (backfill plans with it)
    cap2 = [(to_seconds(T0), 4), (to_seconds(T0) + 3600, 0), (to_seconds(T0) + 7200, 4)]
    jobs2 = [{"submit": 0, "run": 30, "nodes": 4}, {"submit": 31, "run": 50, "nodes": 1}]
    assert starts(jobs2, make_cluster(4, capacity=cap2)) == [0, 120]


def test_age_overtakes_size():
    # a 4-node blocker runs 0..60; at 60 a 1-node job (old) and a 4-node job (new) compete.
    # size favours the big job by 500; age gives 1000 per day.
    def scenario(gap_min):
        return [
            {"submit": 0, "run": 60, "nodes": 4},
            {"submit": 1, "run": 100, "nodes": 1},
            {"submit": 1 + gap_min, "run": 10, "nodes": 4},
        ]

    prof = make_cluster(4, mode="none", w_age=1000.0, max_age_s=86400, w_size=500.0)
    # old by 59 min: age difference 41 < 500, the big job goes first at 60
    assert starts(scenario(58), prof)[1:] == [70, 60]
    # the big job submitted 13 h later -> blocker must outlast that; use a long blocker instead
    jobs = [
        {"submit": 0, "run": 14 * 60, "nodes": 4},
        {"submit": 1, "run": 100, "nodes": 1},
        {"submit": 13 * 60, "run": 10, "nodes": 4},
    ]
    # at 840 the 1-node job has aged 839 min (583 points), the big one 60 min (42 + 500 size)
    assert starts(jobs, prof)[1:] == [840, 940]


def test_age_factor_is_capped_at_max_age():
    # both are older than max_age when they compete: age ties, so size decides
    jobs = [
        {"submit": 0, "run": 3 * 1440, "nodes": 4},
        {"submit": 1, "run": 100, "nodes": 1},
        {"submit": 600, "run": 10, "nodes": 4},
    ]
    prof = make_cluster(4, mode="none", w_age=1000.0, max_age_s=86400, w_size=500.0)
    assert starts(jobs, prof)[1:] == [3 * 1440 + 10, 3 * 1440]


def test_dependency_waits_for_its_predecessor():
    jobs = [
        {"submit": 0, "run": 30, "id": 0},
        {"submit": 1, "run": 10, "id": 1, "depends_on": "0"},
    ]
    assert starts(jobs, make_cluster(4)) == [0, 30]


def test_inserted_job_before_now_is_refused():
    from mirage.sim import warm_start

    tab = make_table([{"submit": 0, "run": 30}])
    sim = warm_start(tab, make_cluster(4), to_seconds(T0) + 600)
    with pytest.raises(SimInputError):
        sim.insert_job(to_seconds(T0), 1, 600)


def test_recorded_eligible_time_holds_a_job_and_its_age_counts_from_it():
    # 1 node. A runs 0..60. B (submitted at 1) was held until 30; C was submitted at 10 with
    # no hold. With age priority only, B is older by submit but younger by eligible time,
    # so C takes the node at 60 and B follows at 90.
    jobs = [{"submit": 0, "run": 60}, {"submit": 1, "run": 30, "start": 90},
            {"submit": 10, "run": 30, "start": 60}]
    tab = make_table(jobs)
    assert tab.eligible is None  # no column: every job is eligible at its submit
    assert starts(jobs, make_cluster(1, mode="none")) == [0, 60, 90]
    held = make_table(jobs)
    eligible = held.submit.copy()
    eligible[1] = to_seconds(T0 + pd.Timedelta(minutes=30))
    import dataclasses
    held = dataclasses.replace(held, eligible=eligible)
    st = replay(held, make_cluster(1, mode="none"), int(held.submit.min()) - 1)
    assert [minutes(int(s)) for s in st] == [0, 90, 60]
    # and a held job never starts before its eligible time, even on an idle cluster
    alone = dataclasses.replace(make_table([{"submit": 0, "run": 10, "start": 45}]),
                                eligible=np.array([to_seconds(T0 + pd.Timedelta(minutes=45))]))
    assert minutes(int(replay(alone, make_cluster(1), int(alone.submit.min()) - 1)[0])) == 45
