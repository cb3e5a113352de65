"""A compact set of features a scheduler expert would look at before resubmitting.

All values are observable on a live cluster at decision time (squeue, sinfo, sacct of recently
started jobs, the service's own job), so a policy trained on them can run in production.
"""

from __future__ import annotations

import numpy as np

from mirage.units import DAY_S, HOUR_S

LONG_LIMIT_S = 24 * HOUR_S
RECENT_S = 24 * HOUR_S
AVG_LAST = 100  # the reference's "average" baseline: mean wait of the last 100 started jobs


def engineered(
    now: int,
    *,
    capacity: int,
    pending: np.ndarray,
    running: np.ndarray,
    started: np.ndarray,
    chain_nodes: int,
    pred: tuple | None,
) -> dict[str, float]:
    """Features at time ``now`` (epoch s).

    ``pending`` rows (submit, nodes, limit_s) in priority order; ``running`` rows
    (submit, start, nodes, limit_s); ``started`` rows (submit, start, nodes, limit_s) of jobs that
    started before ``now`` (the last few hundred are enough), sorted by start; ``pred``
    (submit, start or -1, limit_s) of the predecessor, or None before it is submitted.
    """
    pending = np.asarray(pending, dtype=np.float64).reshape(-1, 3)
    running = np.asarray(running, dtype=np.float64).reshape(-1, 4)
    started = np.asarray(started, dtype=np.float64).reshape(-1, 4)
    hour = (now % DAY_S) / HOUR_S  # local wall-clock time: the traces' times are local
    busy = running[:, 2].sum()
    free = max(capacity - busy, 0.0)
    run_end = running[:, 1] + running[:, 3]  # by their limits: what Slurm's planner assumes
    f = {
        "f_hour_sin": np.sin(2 * np.pi * hour / 24),
        "f_hour_cos": np.cos(2 * np.pi * hour / 24),
        "f_weekday": float(((now // DAY_S) + 3) % 7),  # 1970-01-01 was a Thursday
        "f_capacity": float(capacity),
        "f_free_nodes": free,
        "f_pending_count": float(len(pending)),
        "f_pending_nodes": pending[:, 1].sum(),
        "f_pending_node_hours": float((pending[:, 1] * pending[:, 2]).sum() / HOUR_S),
        "f_pending_long_nodes": pending[pending[:, 2] >= LONG_LIMIT_S, 1].sum(),
        "f_running_node_hours_left": float((running[:, 2] * np.maximum(run_end - now, 0)).sum() / HOUR_S),
        "f_fifo_free_h": _fifo_free_hours(now, free, run_end, running[:, 2], pending[:, 1].sum() + chain_nodes),
    }
    waits = started[:, 1] - started[:, 0]
    recent = started[:, 1] >= now - RECENT_S
    long = recent & (started[:, 3] >= LONG_LIMIT_S)
    big = recent & (started[:, 2] >= chain_nodes)
    f["f_avg100_wait_h"] = _mean_h(waits[-AVG_LAST:])
    f["f_recent_wait_mean_h"] = _mean_h(waits[recent])
    f["f_recent_wait_max_h"] = float(waits[recent].max() / HOUR_S) if recent.any() else 0.0
    f["f_recent_long_wait_h"] = _mean_h(waits[long])
    f["f_recent_big_wait_h"] = _mean_h(waits[big])
    f["f_recent_starts"] = float(recent.sum())
    if pred is None:
        f.update(f_pred_running=0.0, f_pred_wait_h=0.0, f_pred_elapsed_h=0.0, f_pred_remaining_h=0.0)
    else:
        submit, start, limit = pred
        if start < 0 or start > now:
            f.update(f_pred_running=0.0, f_pred_wait_h=(now - submit) / HOUR_S, f_pred_elapsed_h=0.0,
                     f_pred_remaining_h=limit / HOUR_S)
        else:
            f.update(f_pred_running=1.0, f_pred_wait_h=(start - submit) / HOUR_S,
                     f_pred_elapsed_h=(now - start) / HOUR_S, f_pred_remaining_h=(start + limit - now) / HOUR_S)
    return {k: float(v) for k, v in f.items()}


def _mean_h(waits_s: np.ndarray) -> float:
    return float(waits_s.mean() / HOUR_S) if len(waits_s) else 0.0


def _fifo_free_hours(now: int, free: float, ends: np.ndarray, nodes: np.ndarray, need: float) -> float:
    """Hours until ``need`` nodes are free if running jobs end at their limits and nothing else
    starts first: a crude plan of when the queue ahead plus the successor could all fit."""
    if free >= need:
        return 0.0
    order = np.argsort(ends, kind="stable")
    freed = free + np.cumsum(nodes[order])
    hit = np.searchsorted(freed, need)  # first index where freed >= need
    if hit >= len(order):
        return float((ends.max() - now) / HOUR_S) if len(ends) else 0.0
    return float(max(ends[order][hit] - now, 0) / HOUR_S)
