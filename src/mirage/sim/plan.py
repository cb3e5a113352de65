"""What ``sbatch --test-only`` would answer: the scheduler's planned start of a job not yet
submitted.

Slurm estimates from its plan, not from the future: running jobs end at their limits, every
eligible pending job of higher priority holds a reservation (the conservative backfill plan)
and capacity changes as scheduled. A provisioner can ask a live cluster exactly this before it
submits (``sbatch --test-only``, or ``squeue --start`` and ``sprio`` for the queue ahead), so the
answer is a legitimate feature at a decision point. It differs from the what-if outcome, which
knows the real runtimes and the jobs submitted later.

The profile and the earliest-fit search are the ones the backfill pass uses (times rounded up
to ``bf_resolution``), without its window: a plan that far ahead is what ``--test-only`` reports.
"""

from __future__ import annotations

from bisect import bisect_left

from .records import R_LIMIT, R_NODES, R_STATIC, R_SUBMIT
from .freenodes import INF, earliest_fit, free_profile, reserve


def planned_start(sim, nodes: int, limit_s: int, priority: float | None = None
                  ) -> tuple[int | None, float]:
    """``(start, node_seconds_ahead)`` of a job of ``nodes`` x ``limit_s`` submitted now.

    ``start`` is the planned start in epoch seconds (None if the plan never has room: the job
    is larger than any capacity ahead); ``node_seconds_ahead`` is the limit-based work of the
    eligible pending jobs that rank above it. ``priority`` is the recorded-priority component
    (default: the table's ``inserted_tprio``; unless set, the trace's median; as for
    :meth:`Simulator.insert_job`). ``sim`` is not changed.
    """
    s = sim.s
    now, res = sim.now, s.bf_res
    tp = s.inserted_tprio if priority is None else float(priority)
    mine = s.w_trace * tp + s.size_norm * nodes  # its age is 0
    rate, cap_age = s.age_rate, (s.max_age if s.age_capped else INF)
    times, frees = free_profile(sim)
    shape_at: dict = {}  # (nodes, limit) -> earliest start found for it (the profile only shrinks)
    ahead = 0.0
    for r in sim._ordered():
        age = now - r[R_SUBMIT]
        if r[R_STATIC] + rate * (age if age < cap_age else cap_age) < mine:
            break  # priority order: everything after ranks below too
        n = r[R_NODES]
        if sim._blocked(r, n):
            continue  # held by a dependency or a per-user limit: no reservation
        lim = -(-r[R_LIMIT] // res) * res
        ahead += n * r[R_LIMIT]
        shape = (n, lim)
        prev = shape_at.get(shape, now)
        if prev < 0:
            continue
        k = earliest_fit(times, frees, n, lim, bisect_left(times, prev))
        if k < 0:
            shape_at[shape] = -1
            continue
        shape_at[shape] = times[k]
        reserve(times, frees, k, n, times[k] + lim)
    k = earliest_fit(times, frees, nodes, -(-int(limit_s) // res) * res)
    return (None if k < 0 else int(times[k])), ahead
