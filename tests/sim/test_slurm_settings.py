"""The settings the comparison with a real slurmctld added to the model (mirage.live.simcheck,
docs/sim.md "Against a real slurmctld"), each on a hand-made state with a known answer:
whole-node reservations and Slurm's reservation windows (backfill.whole_node,
backfill.window_rounding), integer priorities in submit order (priority.integer), backfill
passes on the wall-clock grid (backfill.aligned), Slurm's planner (backfill.planner) and ages
recomputed every PriorityCalcPeriod (priority.calc_period_s). Off, each leaves the simulation
as it was."""

from __future__ import annotations

import pandas as pd
import pytest


@pytest.mark.parametrize("limit_b, whole, rounding, start_b", [
    (11, False, "up", 20),  # CPU-level reservation: B shares the machine with A's reservation
    (11, True, "up", 200),  # A's reservation takes the whole node from 620 s: B waits
    (10, True, "up", 20),  # B's window ends at A's reservation (ends rounded up): it fits
    (10, True, "slurm", 200),  # Slurm: R ends at 600 exactly, A reserved from 600, B touches it
    (10, False, "slurm", 20),  # the same windows without whole-node reservations: B fits
])
def test_backfill_reservations_as_slurm_plans_them(limit_b, whole, rounding, start_b):
    """What this comparison added to the model (backfill.whole_node, backfill.window_rounding),
    on a hand-made state: 16 CPUs, R holds 11 until its limit says 600 s (it ends at 200 s),
    A (9 CPUs, high priority) must wait for R, B (3 CPUs) could backfill now."""
    from mirage.sim import JobTable, warm_start
    from mirage.sim.cluster import Backfill, ClusterDescription, Priority

    t = pd.Timestamp("2026-01-01")
    s = lambda x: t + pd.Timedelta(seconds=x)  # noqa: E731
    df = pd.DataFrame({
        "job_id": ["R", "A", "B"], "user": ["u", "v", "w"],
        "submit": [s(0), s(10), s(20)], "start": [s(0), s(200), s(200)], "end": [s(200), s(260), s(260)],
        "time_limit_min": [10, 5, limit_b], "nodes": [11, 9, 3], "priority": [0, 100, 0]})
    for col in ("submit", "start", "end"):
        df[col] = df[col].astype("datetime64[s]")
    cluster = ClusterDescription(
        cluster="live", nodes=16, priority=Priority(weight_age=0, weight_trace=1.0),
        backfill=Backfill(mode="conservative", interval_s=5, window_min=60, resolution_s=60,
                          max_job_test=100, whole_node=whole, window_rounding=rounding))
    table = JobTable.from_frame(df)
    sim = warm_start(table, cluster, int(table.submit.min()))
    sim.run_until()
    starts = dict(zip(table.job_id, sim.trace_start - int(table.submit.min())))
    assert starts["A"] == 200 and starts["B"] == start_b


def _table(rows):
    from mirage.sim import JobTable

    t = pd.Timestamp("2026-01-01")
    df = pd.DataFrame(rows)
    for col in ("submit", "start", "end", "eligible"):
        if col in df:
            df[col] = (t + pd.to_timedelta(df[col], unit="s")).astype("datetime64[s]")
    return JobTable.from_frame(df)


def _starts(table, **backfill_and_priority):
    from mirage.sim import warm_start
    from mirage.sim.cluster import Backfill, ClusterDescription, Priority

    pr = {k: v for k, v in backfill_and_priority.items() if k == "integer"}
    bf = {k: v for k, v in backfill_and_priority.items() if k != "integer"}
    cluster = ClusterDescription(
        cluster="live", nodes=16, priority=Priority(weight_age=1000, weight_trace=1.0, **pr),
        backfill=Backfill(mode="conservative", interval_s=5, window_min=60, resolution_s=60, **bf))
    t0 = int(table.submit.min())
    sim = warm_start(table, cluster, t0)
    sim.run_until()
    return dict(zip(table.job_id, (sim.trace_start - t0).tolist()))


@pytest.mark.parametrize("integer, first", [(False, "J2"), (True, "J1")])
def test_integer_priority_keeps_submit_order(integer, first):
    """J1 is submitted first but held until 50 s, J2 is eligible at 20 s; both need the whole
    machine when R ends at 100 s. A real-valued age counted from the eligible time ranks J2
    first; Slurm's integer priority ties them and goes by job id (submit order): J1."""
    table = _table({"job_id": ["R", "J1", "J2"], "user": ["u", "v", "w"], "submit": [0, 10, 20],
                    "eligible": [0, 50, 20], "start": [0, 100, 130], "end": [100, 130, 160],
                    "time_limit_min": [5, 1, 1], "nodes": [16, 16, 16], "priority": [0, 0, 0]})
    starts = _starts(table, integer=integer)
    assert starts[first] == 100 and {starts["J1"], starts["J2"]} == {100, 130}


@pytest.mark.parametrize("aligned, start_s", [(False, 12), (True, 15)])
def test_aligned_backfill_passes_on_the_grid(aligned, start_s):
    """B (16 CPUs, high priority) waits for R; S (1 CPU) can only start by backfill. A pass as
    soon as bf_interval has passed starts it at its submit (12 s); slurmctld's passes fall on
    the wall-clock grid of bf_interval: 15 s."""
    table = _table({"job_id": ["R", "B", "S"], "user": ["u", "v", "w"], "submit": [0, 5, 12],
                    "start": [0, 300, 15], "end": [300, 360, 20], "time_limit_min": [10, 1, 1],
                    "nodes": [15, 16, 1], "priority": [0, 100, 0]})
    assert _starts(table, aligned=aligned)["S"] == start_s


@pytest.mark.parametrize("planner, now", [("slurm", ["P4"]), ("profile", ["P3"])])
def test_slurm_planner_reserves_from_the_running_jobs(planner, now):
    """The state at 60 s, 16 CPUs: A (9 CPUs) runs until its limit says 350 s, B (6) until 180 s.
    P1 (10 CPUs, top priority) is planned when A ends: the node reserved over [300, 600) (its
    window rounded down to the minute). P2 (4 CPUs, 2 min) fits when B ends at 180 s; its window
    [180, 300] runs into P1's reservation at 300 s, which Slurm's planner does not check (its
    will-run test sees the running jobs only, and the rounded windows [180, 300) and [300, 600)
    do not overlap): it reserves [180, 300), so P3 (1 CPU, 3 min) cannot backfill now and P4
    (1 CPU, 1 min) does, as slurmctld did (docs/sim.md). The profile planner puts P2 after P1,
    and P3 starts now and takes the last CPU."""
    from mirage.sim import warm_start
    from mirage.sim.cluster import Backfill, ClusterDescription, Priority

    table = _table({"job_id": ["A", "B", "P1", "P2", "P3", "P4"], "user": ["a", "b", "c", "d", "e", "f"],
                    "submit": [0, 0, 55, 56, 57, 58], "start": [50, 0, 400, 400, 400, 400],
                    "end": [400, 170, 500, 500, 500, 500], "time_limit_min": [5, 3, 5, 2, 3, 1],
                    "nodes": [9, 6, 10, 4, 1, 1], "priority": [0, 0, 100, 50, 10, 0]})
    cluster = ClusterDescription(
        cluster="live", nodes=16, priority=Priority(weight_age=0, weight_trace=1.0),
        backfill=Backfill(mode="conservative", interval_s=5, window_min=60, resolution_s=60,
                          whole_node=True, window_rounding="slurm", planner=planner))
    t0 = int(table.submit.min())
    sim = warm_start(table, cluster, t0 + 60, record=True)
    sim.run_until(t0 + 60)
    started = sorted(j for j, st in zip(table.job_id, sim.trace_start) if st == t0 + 60)
    assert started == now


def test_slurm_planner_needs_one_whole_node():
    """The Slurm planner models one node with whole-node reservations; asked for without them,
    the description is refused with the fix."""
    from mirage.errors import ConfigError
    from mirage.sim.cluster import Backfill, ClusterDescription

    with pytest.raises(ConfigError, match="whole_node"):
        ClusterDescription(cluster="x", nodes=16, backfill=Backfill(planner="slurm"))
    with pytest.raises(ConfigError, match="planner 'ilp' unknown"):
        ClusterDescription(cluster="x", nodes=16, backfill=Backfill(planner="ilp"))


@pytest.mark.parametrize("calc_period_s, phase, first", [(0, 0, "X"), (300, 0, "Y"), (300, 6, "X")])
def test_ages_change_at_the_priority_recalculation(calc_period_s, phase, first):
    """X (fixed part 10) is submitted at 0 s, Y (11) at 100 s; both need the whole machine when R
    ends at 610 s. With PriorityWeightAge 1000 over 7 days X gains its point at 605 s and ties Y,
    and a tie goes by submit order: X first where ages count continuously. Slurm recomputes
    priorities every PriorityCalcPeriod: with ticks at 0, 300, 600 s X still has 10 at 610 s and
    Y goes first; with ticks at 6, 306, 606 s X has its point again."""
    from mirage.sim import warm_start
    from mirage.sim.cluster import Backfill, ClusterDescription, Priority

    table = _table({"job_id": ["R", "X", "Y"], "user": ["u", "v", "w"], "submit": [0, 0, 100],
                    "start": [0, 610, 640], "end": [610, 640, 670], "time_limit_min": [15, 1, 1],
                    "nodes": [16, 16, 16], "priority": [0, 10, 11]})
    cluster = ClusterDescription(
        cluster="live", nodes=16,
        priority=Priority(weight_age=1000, weight_trace=1.0, integer=True, calc_period_s=calc_period_s,
                          calc_phase_s=phase),
        backfill=Backfill(mode="conservative", interval_s=5, window_min=60, resolution_s=60))
    t0 = int(table.submit.min())
    sim = warm_start(table, cluster, t0, record=True)
    sim.run_until()
    starts = dict(zip(table.job_id, (sim.trace_start - t0).tolist()))
    assert starts[first] == 610


def test_calc_period_needs_integer_priorities():
    from mirage.errors import ConfigError
    from mirage.sim.cluster import ClusterDescription, Priority

    with pytest.raises(ConfigError, match="priority.integer"):
        ClusterDescription(cluster="x", nodes=16, priority=Priority(calc_period_s=300))
    with pytest.raises(ConfigError, match="phase within"):
        ClusterDescription(cluster="x", nodes=16, priority=Priority(integer=True, calc_period_s=300,
                                                                    calc_phase_s=300))
