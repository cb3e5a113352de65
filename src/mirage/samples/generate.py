"""Provisioning samples: the outcome of resubmitting at every decision point of one predecessor.

One sample = one (cluster, split, chain size, start time T). The simulator warm-starts from the
trace at T, runs a 2-day warm-up, and the predecessor (a service job of ``chain_nodes`` nodes and
a 48 h limit that runs its full 48 h) is submitted at T + 2 d. From its submission until its end,
every 10 minutes is a decision point: we record the cluster state and, from a what-if query on a
snapshot, the outcome x (hours) of submitting the successor right then. The last point is the
predecessor's end: the reactive submission.

The successor does not exist before it is submitted, so the state history is the same whatever a
policy does until it submits: one table of (state, x) per sample evaluates every policy exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mirage.features.state import HISTORY_STEPS, N_STATE, state_vector
from mirage.features.view import MAX_WAIT_S, ClusterView, point_features
from mirage.sim import SERVICE_USER, JobTable, Simulator, warm_start
from mirage.sim.plan import planned_start
from mirage.sim.whatif import what_if
from mirage.units import DAY_S, DECISION_STEP_S, HOUR_S

CHAIN_LIMIT_MIN = 2880
WARMUP_S = 2 * DAY_S
STARTED_KEPT = 300  # recently started jobs handed to the features (the last 100 + a day's worth)


@dataclass(frozen=True)
class SampleSpec:
    sample_id: int
    cluster: str
    split: str
    chain_nodes: int
    start: pd.Timestamp


def sample_starts(window_start, window_end, *, every_hours: float, horizon_days: float = 5.0) -> list[pd.Timestamp]:
    """Sample start times every ``every_hours`` through a window, stopping ``horizon_days`` before
    its end so each sample's replay (warm-up + the predecessor's life) stays inside the data the
    window's split holds. With the paper's ls6 windows and 4 h this gives 690 and 156 samples."""
    lo = pd.Timestamp(window_start)
    hi = pd.Timestamp(window_end) + pd.Timedelta(days=1) - pd.Timedelta(days=horizon_days)
    if hi <= lo:
        return []
    return list(pd.date_range(lo, hi, freq=pd.Timedelta(hours=every_hours), inclusive="left"))


class SimObserver:
    """Reads what a policy may see off a running simulation: the simulator's producer of
    mirage.features.view.ClusterView (the predecessor is one of the running jobs, as live)."""

    def __init__(self, sim: Simulator, chain_nodes: int, limit_min: int = CHAIN_LIMIT_MIN):
        self.sim = sim
        self.table: JobTable = sim.table
        self.chain_nodes = chain_nodes
        self.submit = self.table.submit
        self.limit_min = limit_min
        self.succ = (limit_min / 60, chain_nodes, 0.0, 0.0)
        self._submits = self.submit.tolist()  # read per running job at every step: a list

    def rows(self) -> tuple[list, list]:
        """Pending rows (submit, nodes, limit_s) in priority order and running rows (submit,
        start, nodes, limit_s), as Simulator.pending_jobs / running_jobs give them (read off
        the simulator's records directly: this runs at every step of every sample)."""
        sim = self.sim
        pending = [(s, n, lim) for _, s, n, lim, _ in sim.pending_jobs()]
        submits, limits, extra, n_trace = self._submits, sim.s.limit, sim.extra, sim.s.n
        running = []
        for _, jid, n, _, exp in sim.running:
            if jid < n_trace:
                lim = limits[jid]
                running.append((submits[jid], exp - lim, n, lim))
            else:
                e = extra[jid]
                running.append((e[0], exp - e[2], n, e[2]))
        return pending, running

    @staticmethod
    def arrays(pending: list, running: list) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`rows` as the float arrays of a ClusterView."""
        return (np.array(pending, dtype=np.float64).reshape(-1, 3),
                np.array(running, dtype=np.float64).reshape(-1, 4))

    def queues(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`rows` as arrays."""
        return self.arrays(*self.rows())

    def started(self, now: int) -> np.ndarray:
        ts = self.sim.trace_start
        idx = np.flatnonzero((ts >= 0) & (ts <= now))
        if len(idx) > STARTED_KEPT:
            idx = idx[np.argpartition(ts[idx], len(idx) - STARTED_KEPT)[-STARTED_KEPT:]]
        idx = idx[np.argsort(ts[idx], kind="stable")]
        return np.column_stack([self.submit[idx], ts[idx], self.table.nodes[idx], self.table.limit[idx]])

    def view(self, now: int, pred: tuple, pending=None, running=None) -> ClusterView:
        """The simulator's ClusterView at ``now`` (mirage.live.observe is the live one)."""
        if pending is None:
            pending, running = self.queues()
        plan_start, ahead = planned_start(self.sim, self.chain_nodes, self.limit_min * 60)
        return ClusterView(now=now, capacity=self.sim.cap, pending=pending, running=running,
                           started=self.started(now), chain_nodes=self.chain_nodes, pred=pred,
                           plan_start=plan_start, plan_ahead_node_s=ahead)

    def observe(self, now: int, pred: tuple) -> tuple[np.ndarray, dict]:
        """The 42-number state and the decision point's pred_* and f_* columns at ``now``."""
        pending, running = self.rows()
        vec = self._state(now, pred, pending, running)
        return vec, point_features(self.view(now, pred, *self.arrays(pending, running)))

    def state(self, now: int) -> np.ndarray:
        """The 42-number state alone (the history before the predecessor's submission)."""
        return self._state(now, None, *self.rows())

    def _state(self, now, pred, pending, running) -> np.ndarray:
        pred_tuple = None
        if pred is not None:
            submit, start, limit = pred
            running_now = 0 <= start <= now
            pred_tuple = (
                limit / HOUR_S, self.chain_nodes,
                ((start if running_now else now) - submit) / HOUR_S,
                (now - start) / HOUR_S if running_now else 0.0,
            )
        return state_vector(now, pending, running, pred_tuple, self.succ)

class Episode:
    """One predecessor's life in a warm-started simulation, stepped decision point by point.

    Iterating yields ``(t, point_row)`` at every decision point; between two points the caller
    may read :meth:`window`, query the simulator (``self.sim``) or insert the successor into it.
    ``history`` collects the 42-number state of every step, 24 h before the first point on.
    """

    def __init__(self, table: JobTable, cluster, spec: SampleSpec, *, step_s: int = DECISION_STEP_S):
        self.spec = spec
        self.step_s = step_s
        self.limit_s = CHAIN_LIMIT_MIN * 60
        t0 = int(spec.start.value // 10**9)
        self.t_pred = t0 + WARMUP_S
        self.sim = warm_start(table, cluster, t0, record=True)
        self.obs = SimObserver(self.sim, spec.chain_nodes)
        self.history: list[np.ndarray] = []
        # 143 steps of history before the predecessor's submission; point 0 adds the 144th
        for t in range(self.t_pred - (HISTORY_STEPS - 1) * step_s, self.t_pred, step_s):
            self.sim.run_until(t)
            self.history.append(self.obs.state(t))
        self.pred = self.sim.insert_job(self.t_pred, spec.chain_nodes, self.limit_s, user=SERVICE_USER)

    def window(self) -> np.ndarray:
        """The 144x42 state history ending at the current decision point."""
        return np.vstack(self.history[-HISTORY_STEPS:])

    def pred_start(self) -> int:
        return self.sim.starts.get(self.pred, -1)

    def __iter__(self):
        t, k = self.t_pred, 0
        while True:
            self.sim.run_until(t)
            start = self.pred_start()
            vec, feats = self.obs.observe(t, (self.t_pred, start, self.limit_s))
            self.history.append(vec)
            row = {"sample_id": self.spec.sample_id, "k": k, "t": pd.Timestamp(t, unit="s"), **feats}
            yield t, row
            if start >= 0 and t >= start + self.limit_s:
                return  # that was the predecessor's end: the reactive point
            t, k = t + self.step_s, k + 1
            if start >= 0:
                t = min(t, start + self.limit_s)
            elif t - self.t_pred > MAX_WAIT_S:
                raise RuntimeError(f"sample {self.spec}: the predecessor did not start within 30 days")


def generate_sample(table: JobTable, cluster, spec: SampleSpec, *, step_s: int = DECISION_STEP_S) -> dict:
    """Simulate one sample; returns ``{"sample": dict, "points": DataFrame, "history": array}``.

    ``history`` has ``n_points + HISTORY_STEPS - 1`` rows: the state at decision point k is
    ``history[k : k + HISTORY_STEPS]``, the last 24 h ending at that point.
    """
    ep = Episode(table, cluster, spec, step_s=step_s)
    rows, succ_starts, censored = _decision_points(ep)
    pred_start = ep.pred_start()
    pred_end = pred_start + ep.limit_s
    points = _points_table(rows, succ_starts, pred_end)
    sample = _sample_row(spec, ep.t_pred, pred_start, pred_end, points, censored)
    hist = np.vstack(ep.history).astype(np.float32)
    assert hist.shape == (len(points) + HISTORY_STEPS - 1, N_STATE)
    return {"sample": sample, "points": points, "history": hist}


def _decision_points(ep: Episode) -> tuple[list[dict], list[int], int]:
    """Step ``ep`` through its decision points: each point's row, the successor's start if
    submitted then (a what-if on a snapshot), and how many of those starts were censored."""
    spec = ep.spec
    rows, succ_starts, censored = [], [], 0
    for t, row in ep:
        succ_start = what_if(ep.sim.snapshot(), t, spec.chain_nodes, CHAIN_LIMIT_MIN, SERVICE_USER,
                             max_wait_s=MAX_WAIT_S)
        if succ_start is None:  # not started within MAX_WAIT_S: censored at that bound
            succ_start, censored = t + MAX_WAIT_S, censored + 1
        rows.append(row)
        succ_starts.append(succ_start)
    return rows, succ_starts, censored


def _points_table(rows: list[dict], succ_starts: list[int], pred_end: int) -> pd.DataFrame:
    """The decision points as a table, with x_h: the successor's start relative to the
    predecessor's end, in hours."""
    points = pd.DataFrame(rows)
    points["t"] = points["t"].astype("datetime64[s]")
    points.insert(3, "x_h", (np.asarray(succ_starts, dtype=np.float64) - pred_end) / HOUR_S)
    return points


def _sample_row(spec: SampleSpec, t_pred: int, pred_start: int, pred_end: int,
                points: pd.DataFrame, censored: int) -> dict:
    """The sample's own row: what it is, its predecessor's life and the reactive outcome."""
    return {
        "sample_id": spec.sample_id,
        "cluster": spec.cluster,
        "split": spec.split,
        "chain_nodes": spec.chain_nodes,
        "sample_start": spec.start,
        "pred_submit": pd.Timestamp(t_pred, unit="s"),
        "pred_start": pd.Timestamp(pred_start, unit="s"),
        "pred_end": pd.Timestamp(pred_end, unit="s"),
        "n_points": len(points),
        "reactive_x_h": float(points["x_h"].iloc[-1]),
        "censored_points": censored,
    }
