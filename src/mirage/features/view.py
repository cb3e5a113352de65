"""One cluster-state view, two producers: the simulator (samples) and a live Slurm (provision).

A :class:`ClusterView` holds exactly what a user of the cluster can see at a decision point:
the running and pending jobs, the jobs started lately, the capacity, the service's own
predecessor and the scheduler's --test-only plan for the successor. :func:`point_features`
turns it into the row a policy decides on, so a policy meets the same numbers in training
(mirage.samples.generate) and in production (mirage.live.observe).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mirage.features.engineered import engineered
from mirage.units import DAY_S, HOUR_S

#: What --test-only "never" becomes: the simulator's censoring bound for a wait.
MAX_WAIT_S = 30 * DAY_S


@dataclass(frozen=True)
class ClusterView:
    """The cluster at ``now`` (epoch s).

    ``pending`` rows (submit, nodes, limit_s) in priority order; ``running`` rows
    (submit, start, nodes, limit_s); ``started`` rows (submit, start, nodes, limit_s) of jobs
    started before ``now``, sorted by start; ``pred`` (submit, start or -1, limit_s) of the
    service's running link; ``plan_start`` the planned start of a successor submitted now
    (None: no room in the plan) and ``plan_ahead_node_s`` the work queued ahead of it.
    """

    now: int
    capacity: int
    pending: np.ndarray
    running: np.ndarray
    started: np.ndarray
    chain_nodes: int
    pred: tuple[int, int, int]
    plan_start: int | None
    plan_ahead_node_s: float


def pred_columns(t: int, t_pred: int, start: int, limit_s: int) -> dict:
    """What the service knows of its own predecessor at time ``t`` (start < 0: still pending)."""
    running = 0 <= start <= t
    return {
        "pred_running": running,
        "pred_elapsed_h": (t - start) / HOUR_S if running else 0.0,
        "pred_wait_h": ((start if running else t) - t_pred) / HOUR_S,
        "pred_remaining_h": (start + limit_s - t) / HOUR_S if running else float("nan"),
    }


def plan_features(now: int, plan_start: int | None, ahead_node_s: float) -> dict[str, float]:
    wait = MAX_WAIT_S if plan_start is None else plan_start - now
    return {"f_plan_wait_h": wait / HOUR_S, "f_plan_ahead_node_hours": ahead_node_s / HOUR_S}


def point_features(view: ClusterView) -> dict:
    """The pred_* and f_* columns of one decision point, as the sample tables hold them."""
    submit, start, limit_s = view.pred
    feats = engineered(view.now, capacity=view.capacity, pending=view.pending, running=view.running,
                       started=view.started, chain_nodes=view.chain_nodes, pred=view.pred)
    feats.update(plan_features(view.now, view.plan_start, view.plan_ahead_node_s))
    return {**pred_columns(view.now, submit, start, limit_s), **feats}
