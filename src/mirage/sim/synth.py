"""Synthetic traces: the demand of :mod:`mirage.traces.synth` scheduled by this simulator.

One scheduler serves the whole project: a synthetic trace's start times are the simulator's,
run over the demand from an empty cluster (the generator's warm-up fills it before the trace's
start) with the calibration's ``scheduler`` section (:func:`scheduler_for`; other settings make
traces of a multifactor Slurm with conservative backfill). By default, what a plain Slurm
cluster of the generator's kind does:

- priority by age only (first in, first out; no cap, so the order never changes);
- EASY backfill after every event (``bf_interval`` 0): the first job that cannot start gets a
  reservation from the running jobs' *limits*, later jobs start now only if they do not delay
  it; ``bf_max_job_test`` is the calibration's ``backfill_depth``; the window (7 days) holds the
  longest limit twice, so the reservation of any job is always found;
- the calibration's per-user running-job limit (Slurm's QOS MaxJobsPerUser) and its capacity
  schedule; dependency chains wait for their predecessor's end.

Jobs held by a dependency or the per-user limit are skipped, not blocking: that is how long
waits on ls6 arise without any shortage of nodes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from mirage.traces.synth import DEFAULT_SCHEDULER, Demand, draw_demand

from .cluster import Backfill, ClusterDescription, Priority
from .engine import INF
from .jobs import JobTable
from .warmstart import warm_start
from mirage.units import DAY_S

#: the backfill window: twice the longest limit of the calibrations (48 h) plus a day
WINDOW_MIN = 7 * 24 * 60


def scheduler_for(demand: Demand) -> ClusterDescription:
    """The simulator's setting that schedules ``demand`` (times in seconds since its origin):
    the calibration's ``scheduler`` section, by default FIFO and EASY backfill after every
    event."""
    s = {**DEFAULT_SCHEDULER, **demand.scheduler}
    unknown = set(s) - set(DEFAULT_SCHEDULER)
    if unknown:
        raise ValueError(f"unknown synthetic scheduler settings {sorted(unknown)}; known: "
                         f"{sorted(DEFAULT_SCHEDULER)}. Fix: correct scheduler in the synthetic params")
    if s["backfill_mode"] not in ("easy", "conservative"):
        raise ValueError(f"synthetic scheduler backfill_mode {s['backfill_mode']!r}: easy or "
                         "conservative. Fix: correct scheduler.backfill_mode in the synthetic params")
    fifo = not s["max_age_days"]
    src = ("mirage.sim.synth: the synthetic generator's scheduler ("
           + ("FIFO" if fifo else "multifactor priority") + f" + {s['backfill_mode']} backfill, "
           "per-user limit)")
    caps = demand.capacity
    return ClusterDescription(
        cluster=demand.cluster,
        nodes=int(caps[0][1]),
        capacity=tuple((int(t), int(c)) for t, c in caps),
        priority=Priority(weight_age=float(s["weight_age"]),
                          max_age_s=1 if fifo else int(round(float(s["max_age_days"]) * DAY_S)),
                          weight_size=float(s["weight_size"]), weight_trace=float(s["weight_trace"]),
                          age_capped=not fifo, integer=bool(s["integer"])),
        backfill=Backfill(mode=s["backfill_mode"], interval_s=int(s["bf_interval_s"]),
                          window_min=WINDOW_MIN, resolution_s=int(s["bf_resolution_s"]),
                          max_job_test=int(demand.backfill_depth)),
        max_jobs_per_user=int(demand.user_running_limit),
        max_nodes_per_user=None,
        warm_start=False,
        infer_dependencies=False,
        whatif_background="simulate",
        sources={"*": src},
    )


def generator_description(demand: Demand) -> ClusterDescription:
    """The simulator's description of the cluster that scheduled ``demand``: its generator's
    own scheduler (:func:`scheduler_for`), for replaying the synthetic trace in the calibrated
    mode (``description: generator``). Warm starts as for a real trace, and the dependency
    chains are inferred from the text as for a real log, which records none (the TACC layout
    the synthetic trace is written in has no field for them); capacity times in epoch seconds."""
    d = scheduler_for(demand)
    origin = int(demand.origin.timestamp())
    src = d.sources["*"].replace("mirage.sim.synth: ", "")
    return dataclasses.replace(
        d, capacity=tuple((origin + t, c) for t, c in d.capacity), warm_start=True,
        infer_dependencies=True,
        sources={"*": f"the synthetic trace's own scheduler: {src}",
                 "model.infer_dependencies": "the TACC text the trace is written in drops the "
                 "chains; inferred from it as for a real log"})


def demand_table(demand: Demand) -> JobTable:
    """``demand`` as the simulator's job table (index = the demand's job index)."""
    j = demand.jobs
    n = len(demand)
    submit = np.asarray(j["submit"], dtype=np.int64)
    user = np.asarray(j["user"], dtype=np.int64)
    return JobTable(
        job_id=np.arange(n).astype(str).astype(object),
        submit=submit,
        # no recorded schedule: the simulator makes one (never read outside pinned mode)
        start=submit.copy(),
        end=submit + np.asarray(j["runtime"], dtype=np.int64),
        limit=np.asarray(j["limit_min"], dtype=np.int64) * 60,
        run=np.asarray(j["runtime"], dtype=np.int64),
        nodes=np.asarray(j["nodes"], dtype=np.int64),
        user=user,
        # the recorded priority, which a scheduler with weight_trace > 0 weighs in
        tprio=np.asarray(j["priority"], dtype=np.float64),
        dep=np.asarray(j["after"], dtype=np.int64),  # -1 (NO_DEP) where none
        users=tuple(str(u) for u in range(int(user.max()) + 1 if n else 0)),
    )


def schedule(demand: Demand) -> np.ndarray:
    """The start of every job of ``demand`` (s since its origin), run to completion."""
    table = demand_table(demand)
    sim = warm_start(table, scheduler_for(demand), 0, warm=False, pinned=False, record=True)
    sim.run_until(INF)
    start = sim.trace_start
    if (start < 0).any():
        raise RuntimeError(f"synthetic schedule stalled: {int((start < 0).sum())} jobs never "
                           "started (a job larger than the cluster, or a dependency loop)")
    return start


def synthesize(cluster: str, start: str | pd.Timestamp, days: float, seed: int,
               params: dict | None = None, *, with_description: bool = False):
    """A synthetic canonical job table for ``cluster`` with submits in ``[start, start+days)``.

    Also contains the jobs submitted during the warm-up before ``start`` that are still queued
    or running at ``start``. Every job starts and ends (the schedule runs to completion), so
    ends may lie after ``start + days``. Same arguments, same table.

    With ``with_description``, returns ``(table, description)``: the table and the
    :func:`generator_description` of its scheduler.
    """
    demand = draw_demand(cluster, start, days, seed, params)
    table = demand.to_table(schedule(demand))
    return (table, generator_description(demand)) if with_description else table
