"""The --test-only estimate (mirage.sim.plan.planned_start) on scenarios with known plans."""

from __future__ import annotations

from mirage.sim import warm_start
from mirage.sim.plan import planned_start
from mirage.sim.whatif import what_if

from .scenarios import make_cluster, make_table, minutes


def _sim_at(jobs, at_min, **profile):
    tab = make_table(jobs)
    t0 = int(tab.submit.min()) - 1
    sim = warm_start(tab, make_cluster(4, **profile), t0)
    sim.run_until(t0 + 1 + at_min * 60)
    return sim


def _plan(sim, nodes, limit_min, priority=None):
    start, ahead = planned_start(sim, nodes, limit_min * 60, priority)
    return (None if start is None else minutes(start)), ahead / 3600


def test_idle_cluster_plans_an_immediate_start():
    sim = _sim_at([{"submit": 0, "run": 10, "nodes": 1}], 30)
    assert _plan(sim, 4, 60) == (30, 0)


def test_running_jobs_are_planned_to_end_at_their_limits_not_their_runtimes():
    # A really runs 30 min but its limit is 120: the plan (like Slurm's) frees it at 120
    sim = _sim_at([{"submit": 0, "run": 30, "limit": 120, "nodes": 3}], 5)
    assert _plan(sim, 2, 60) == (120, 0)
    assert _plan(sim, 1, 60) == (5, 0)  # one node is idle now
    # the what-if, which knows the real runtime, answers 30
    assert minutes(what_if(sim, sim.now, 2, 60)) == 30


def test_a_higher_priority_pending_job_is_reserved_first_a_lower_one_is_not():
    # A holds 4 nodes until 60. B (4 nodes, 60 min) queues with a high recorded priority, C
    # (4 nodes) with a low one. The probe's recorded priority is in between: after A it must
    # wait for B's reservation (60..120), not for C's.
    jobs = [{"submit": 0, "run": 60, "nodes": 4},
            {"submit": 1, "run": 60, "nodes": 4, "prio": 3000},
            {"submit": 2, "run": 60, "nodes": 4, "prio": 10}]
    sim = _sim_at(jobs, 10, w_trace=1.0, w_age=0.0)
    start, ahead_h = _plan(sim, 4, 60, priority=1000)
    assert start == 120
    assert ahead_h == 4.0  # B: 4 nodes x 1 h
    # a probe ranking above both starts when A ends
    assert _plan(sim, 4, 60, priority=5000) == (60, 0)


def test_a_job_held_by_the_per_user_limit_gets_no_reservation():
    # u1 runs one job (limit 1 per user); its second job cannot start, so it reserves nothing
    jobs = [{"submit": 0, "run": 60, "nodes": 1, "user": "u1"},
            {"submit": 1, "run": 60, "nodes": 3, "user": "u1", "prio": 3000}]
    sim = _sim_at(jobs, 10, w_trace=1.0, w_age=0.0, max_jobs=1)
    assert _plan(sim, 3, 60, priority=1000) == (10, 0)


def test_the_plan_leaves_the_simulation_unchanged():
    jobs = [{"submit": 0, "run": 60, "nodes": 4},
            {"submit": 1, "run": 60, "nodes": 2, "prio": 3000},
            {"submit": 2, "run": 30, "nodes": 3}]
    sim = _sim_at(jobs, 10, w_trace=1.0)
    before = sim.state()
    planned_start(sim, 4, 3600)
    assert sim.state() == before


def test_a_job_larger_than_every_capacity_ahead_has_no_plan():
    sim = _sim_at([{"submit": 0, "run": 10, "nodes": 1}], 30)
    assert planned_start(sim, 5, 3600)[0] is None
