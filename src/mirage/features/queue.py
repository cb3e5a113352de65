"""The observable queue at a decision point, and one drawn future of it (the twin policy's input).

:class:`QueueView` holds what a user of the live cluster can see (``squeue``/``sinfo``): every
running job's size, limit, start and user, every pending job's submit (queue entry), size,
limit, current priority and user in priority order, the job ids and which job a pending job's
dependency waits on (``squeue %i`` / ``%E``), the capacity, and the predecessor's submit,
start (-1 while it is pending) and limit. There is deliberately no runtime, end or
future field: the true runtimes and the future arrivals of a trace must never reach a policy.
The predecessor is not one of the running or pending rows; it is described by the ``pred_*``
fields only.

:class:`QueueFuture` is one draw of what the view leaves open (the runtime of every job in it,
the arrivals over a horizon), made by a policy (``mirage.twin.policy``) and simulated by the
engine side (``mirage.twin.world``). Both are plain arrays so that this module, on the features
floor, depends on nothing above it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

#: the user name the service (predecessor and successor) runs under in a view
SERVICE_NAME = "<service>"

_INT = np.int64
_FLOAT = np.float64


def _arr(values, dtype) -> np.ndarray:
    out = np.array(values, dtype=dtype).reshape(-1)
    out.flags.writeable = False
    return out


#: the running rows' fields, kept in one order
_RUNNING = ("running_nodes", "running_limit_s", "running_start", "running_user", "running_id")


@dataclass(frozen=True, eq=False)
class QueueView:
    """What a user sees of the cluster at ``now`` (epoch seconds of the cluster's clock)."""

    now: int
    capacity: int
    # running jobs, in the canonical order (start, limit, nodes, user) whatever order is given
    running_nodes: np.ndarray
    running_limit_s: np.ndarray
    running_start: np.ndarray
    running_user: np.ndarray  # object (str)
    # pending jobs, highest priority first
    pending_submit: np.ndarray
    pending_nodes: np.ndarray
    pending_limit_s: np.ndarray
    pending_priority: np.ndarray  # the current total priority, as squeue %Q shows it
    pending_user: np.ndarray  # object (str)
    # the predecessor (the service's running link) and the chain
    pred_submit: int
    pred_start: int  # -1 while pending
    pred_limit_s: int
    chain_nodes: int
    #: its current priority while pending (squeue %Q); once it runs, the priority it started
    #: with where the observer saw it pend (NaN where not known)
    pred_priority: float = float("nan")
    # job ids (squeue %i) and, per pending job, the id of the queued or running job its
    # dependency waits on (squeue %E), -1 for none; None: ids unknown, no dependencies
    running_id: np.ndarray | None = None
    pending_id: np.ndarray | None = None
    pending_dep: np.ndarray | None = None

    def __post_init__(self):
        set_ = object.__setattr__
        for name in ("now", "capacity", "pred_submit", "pred_start", "pred_limit_s", "chain_nodes"):
            set_(self, name, int(getattr(self, name)))
        set_(self, "pred_priority", float(self.pred_priority))
        n_run, n_pend = len(np.reshape(self.running_nodes, -1)), len(np.reshape(self.pending_nodes, -1))
        for name, n in (("running_id", n_run), ("pending_id", n_pend), ("pending_dep", n_pend)):
            if getattr(self, name) is None:
                set_(self, name, np.full(n, -1))
        for name in ("running_nodes", "running_limit_s", "running_start", "pending_submit",
                     "pending_nodes", "pending_limit_s", "running_id", "pending_id",
                     "pending_dep"):
            set_(self, name, _arr(getattr(self, name), _INT))
        set_(self, "pending_priority", _arr(self.pending_priority, _FLOAT))
        for name in ("running_user", "pending_user"):
            set_(self, name, _arr([str(u) for u in np.asarray(getattr(self, name)).reshape(-1)],
                                  object))
        nr, np_ = len(self.running_nodes), len(self.pending_nodes)
        for name in _RUNNING[1:]:
            if len(getattr(self, name)) != nr:
                raise ValueError(f"QueueView: {name} has {len(getattr(self, name))} rows, "
                                 f"running_nodes {nr}")
        for name in ("pending_submit", "pending_limit_s", "pending_priority", "pending_user",
                     "pending_id", "pending_dep"):
            if len(getattr(self, name)) != np_:
                raise ValueError(f"QueueView: {name} has {len(getattr(self, name))} rows, "
                                 f"pending_nodes {np_}")
        # running rows in one canonical order (start, limit, nodes, user): a producer's own
        # order may carry what is not observable (the simulator's heap is keyed by true ends)
        order = np.lexsort((self.running_user.astype(str), self.running_nodes,
                            self.running_limit_s, self.running_start))
        for name in _RUNNING:
            set_(self, name, _arr(getattr(self, name)[order], getattr(self, name).dtype))

    # ---- derived, all observable -------------------------------------------------------------
    @property
    def n_running(self) -> int:
        return len(self.running_nodes)

    @property
    def n_pending(self) -> int:
        return len(self.pending_nodes)

    @property
    def pred_running(self) -> bool:
        return 0 <= self.pred_start <= self.now

    @property
    def pred_end(self) -> int | None:
        """The predecessor's end (it runs to its limit), None while it is pending."""
        return self.pred_start + self.pred_limit_s if self.pred_running else None

    @property
    def running_elapsed_s(self) -> np.ndarray:
        return self.now - self.running_start

    def equals(self, other: "QueueView") -> bool:
        """Field by field, arrays element by element (NaN equals NaN)."""
        if not isinstance(other, QueueView):
            return False
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, np.ndarray):
                if a.shape != b.shape or a.dtype != b.dtype:
                    return False
                if a.dtype == object:
                    if not all(x == y for x, y in zip(a, b)):
                        return False
                elif not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                    return False
            elif isinstance(a, float):
                if not (a == b or (np.isnan(a) and np.isnan(b))):
                    return False
            elif a != b:
                return False
        return True


@dataclass(frozen=True, eq=False)
class QueueFuture:
    """One drawn future of a :class:`QueueView`: a runtime for every job it shows and the jobs
    that arrive after ``view.now``. Runtimes are total seconds from the job's start (a running
    job's is longer than its elapsed time), capped at the job's limit."""

    running_run: np.ndarray  # aligned with view.running_*
    pending_run: np.ndarray  # aligned with view.pending_*
    arrival_submit: np.ndarray  # > view.now, sorted
    arrival_nodes: np.ndarray
    arrival_limit_s: np.ndarray
    arrival_run: np.ndarray
    arrival_user: np.ndarray  # object (str)
    arrival_tprio: np.ndarray  # the recorded-priority component (trace ``priority`` column)
    succ_tprio: float = 0.0  # the successor's recorded-priority component
    #: the job each arrival waits on (afterany): -1 none, else the id of a job the view shows
    #: (running_id / pending_id) or another arrival's ``arrival_id``; None: no dependencies
    arrival_dep: np.ndarray | None = None
    #: ids of the arrivals, never -1 and distinct from the view's ids (a drawn arrival's is
    #: negative)
    arrival_id: np.ndarray | None = None
    #: the scheduler's plan (every job to its limit, nothing arriving), which a user sees, not a
    #: draw: an ablation that puts the trace's truth in place of the draws leaves it as it is
    plan: bool = False

    @property
    def n_arrivals(self) -> int:
        return len(self.arrival_submit)
