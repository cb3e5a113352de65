"""The twin's drawn worlds (the engine side of mirage.twin.policy): the observable queue read
off a running simulation, and one drawn future of it simulated with the successor submitted now.

:func:`view_from_sim` copies only what ``squeue``/``sinfo`` would show: the running jobs' start,
size, limit and user (the limit-based expected end of :meth:`Simulator.running_jobs`, never
the record's true end), the pending jobs' queue entry, size, limit, current priority and user
in priority order (never the record's runtime), the capacity now (never the schedule ahead).

:func:`simulate_x` builds a fresh world from a view and a :class:`QueueFuture` alone (a job
table: running jobs with their drawn ends, pending jobs with their real queue entry and the
priority the view shows, the drawn arrivals), warm-starts it at the view's time, submits the
successor and runs until it starts. It never reads the simulation the view came from.
"""

from __future__ import annotations

import numpy as np

from mirage.features.queue import SERVICE_NAME, QueueFuture, QueueView

from mirage.sim.cluster import ClusterDescription
from mirage.sim.engine import (
    R_DEP, R_JID, R_LIMIT, R_NODES, R_STATIC, R_SUBMIT, R_USER, SERVICE_USER, Simulator,
    priority_terms,
)
from mirage.sim.jobs import NO_DEP, JobTable
from mirage.sim.warmstart import warm_start
from mirage.sim.whatif import what_if
from mirage.units import DAY_S, HOUR_S

#: the predecessor must start within this long in a drawn world, or the draw counts as +inf
PRED_MAX_WAIT_S = 30 * DAY_S
#: a pending job's placeholder start (never reached) is this far past the view's time
_FAR_S = 10**8


def _user_name(table: JobTable, u: int) -> str:
    if u == SERVICE_USER:
        return SERVICE_NAME
    if 0 <= u < len(table.users):
        return table.users[u]
    return f"<user {u}>"


def current_priority(sim: Simulator, static: float, submit: int, now: int) -> float:
    """A pending job's total priority at ``now``, as Slurm shows it (squeue %Q): its static
    part plus the age factor (capped at the maximum age where the description caps it)."""
    s = sim.s
    age = now - submit
    if s.age_capped and age > s.max_age:
        age = s.max_age
    return float(static + s.age_rate * age)


def view_from_sim(sim: Simulator, now: int, *, pred_jid: int, pred_submit: int, pred_limit_s: int,
                  chain_nodes: int) -> QueueView:
    """The observable queue of ``sim`` standing at ``now`` (call after ``sim.run_until(now)``).
    ``pred_jid``: the predecessor (inserted job), described by the pred_* fields only."""
    table = sim.table
    names = {}

    def name(u):
        if u not in names:
            names[u] = _user_name(table, u)
        return names[u]

    rn, rl, rs, ru, rid = [], [], [], [], []
    for jid, start, expected_end, n, u in sim.running_jobs():
        if jid == pred_jid:
            continue
        rid.append(jid)
        rn.append(n)
        rl.append(expected_end - start)  # limit-based: the true end is never read
        rs.append(start)
        ru.append(name(u))
    ps, pn, pl, pp, pu, pid, pdep = [], [], [], [], [], [], []
    pred_priority = float("nan")
    live = sim.live
    for r in sim._ordered():
        # observable fields only: never R_RUN (the true runtime); the dependency only while it
        # holds the job (squeue %E shows it unfulfilled: the job waited on is queued or running)
        prio = current_priority(sim, r[R_STATIC], r[R_SUBMIT], now)
        if r[R_JID] == pred_jid:
            pred_priority = prio
            continue
        dep = r[R_DEP]
        pid.append(r[R_JID])
        pdep.append(dep if dep >= 0 and dep in live and dep != pred_jid else -1)
        ps.append(r[R_SUBMIT])
        pn.append(r[R_NODES])
        pl.append(r[R_LIMIT])
        pp.append(prio)
        pu.append(name(r[R_USER]))
    start = sim.starts.get(pred_jid, -1)
    if 0 <= start <= now and pred_jid in sim.extra:
        # a running predecessor: the priority it had when it started (the user watched it pend)
        pred_priority = current_priority(sim, sim.extra[pred_jid][5], sim.extra[pred_jid][0], start)
    return QueueView(
        now=now, capacity=sim.cap,
        running_nodes=rn, running_limit_s=rl, running_start=rs, running_user=ru,
        pending_submit=ps, pending_nodes=pn, pending_limit_s=pl, pending_priority=pp,
        pending_user=pu, running_id=rid, pending_id=pid, pending_dep=pdep,
        pred_submit=pred_submit, pred_start=start,
        pred_limit_s=pred_limit_s, chain_nodes=chain_nodes, pred_priority=pred_priority)


def with_inferred_dependencies(trace, cluster: ClusterDescription):
    """The canonical job table ``trace`` (a DataFrame) with ``depends_on`` filled where
    ``cluster`` infers dependencies and the trace records none: the chains the simulator sees,
    for the twin's arrival model to copy (mirage.twin.policy)."""
    if not cluster.infer_dependencies:
        return trace
    from mirage.sim.inference import infer_dependencies

    table = JobTable.from_frame(trace)
    dep = infer_dependencies(table)
    inferred = {str(table.job_id[i]): str(table.job_id[d]) for i, d in enumerate(dep.tolist())
                if d >= 0}
    out = trace.copy()
    ids = out["job_id"].astype(str)
    fill = ids.map(inferred)
    recorded = out["depends_on"] if "depends_on" in out else None
    out["depends_on"] = (fill if recorded is None else recorded.fillna(fill)).astype("string")
    return out


def twin_cluster(cluster: ClusterDescription, view: QueueView) -> ClusterDescription:
    """The description a drawn world is simulated with: the cluster's scheduler, the capacity
    seen now, and no inference from recorded times (a drawn world has none)."""
    return cluster.with_(infer_dependencies=False, infer_holds=False, pin_idle_waiters=False,
                         capacity=((int(view.now), int(view.capacity)),), capacity_infer=False)


def _tprio(cluster: ClusterDescription, priority: np.ndarray, nodes: np.ndarray,
           age_s: np.ndarray) -> np.ndarray:
    """The recorded-priority component that gives ``priority`` under ``cluster``'s weights
    (the engine's priority, mirage.sim.engine.priority_terms, solved for it); 0 where its
    weight is 0."""
    t = priority_terms(cluster)
    if t.w_trace == 0:
        return np.zeros(len(priority))
    age = np.minimum(age_s, t.max_age) if t.age_capped else age_s
    return (np.asarray(priority, float) - t.age_rate * age - t.size_norm * nodes) / t.w_trace


def service_tprio(view: QueueView, future: QueueFuture, cluster: ClusterDescription) -> float:
    """The recorded-priority component of the service's jobs in the drawn world (the
    predecessor and the successor: one user, one size): the predecessor's own, solved from
    the priority the view shows for it (while it pends, or when it started), else the
    future's ``succ_tprio`` (the policy's estimate)."""
    if not np.isfinite(view.pred_priority):
        return float(future.succ_tprio)
    at = view.pred_start if view.pred_running else view.now
    return float(_tprio(cluster, np.array([view.pred_priority]), np.array([view.chain_nodes]),
                        np.array([at - view.pred_submit]))[0])


def world_table(view: QueueView, future: QueueFuture, cluster: ClusterDescription) -> tuple[JobTable, int]:
    """The drawn world as a job table, and the predecessor's index in it."""
    now = int(view.now)
    far = now + _FAR_S
    nr, npd, na = view.n_running, view.n_pending, future.n_arrivals
    pred_run = view.pred_running
    # rows: running jobs, pending jobs, the predecessor, arrivals
    submit = np.concatenate([view.running_start, view.pending_submit, [view.pred_submit],
                             future.arrival_submit]).astype(np.int64)
    p_run = int(view.pred_limit_s)
    start = np.concatenate([view.running_start, np.full(npd, far),
                            [view.pred_start if pred_run else far], np.full(na, far)]).astype(np.int64)
    run = np.concatenate([future.running_run, future.pending_run, [p_run],
                          future.arrival_run]).astype(np.int64)
    limit = np.concatenate([view.running_limit_s, view.pending_limit_s, [view.pred_limit_s],
                            future.arrival_limit_s]).astype(np.int64)
    run = np.minimum(run, limit)
    nodes = np.concatenate([view.running_nodes, view.pending_nodes, [view.chain_nodes],
                            future.arrival_nodes]).astype(np.int64)
    pend_tprio = _tprio(cluster, view.pending_priority, view.pending_nodes,
                        now - view.pending_submit)
    pred_tprio = service_tprio(view, future, cluster)
    tprio = np.concatenate([np.zeros(nr), pend_tprio, [pred_tprio],
                            np.asarray(future.arrival_tprio, float)])
    user_names = np.concatenate([view.running_user, view.pending_user, [SERVICE_NAME],
                                 np.asarray(future.arrival_user, dtype=object)])
    uniq, codes = np.unique(user_names.astype(str), return_inverse=True)
    codes = codes.astype(np.int64)
    service = np.flatnonzero(uniq == SERVICE_NAME)
    if len(service):
        codes[codes == service[0]] = SERVICE_USER
    # a pending job's dependency: the row of the running or pending job it waits on; an
    # arrival's: the row of a shown job or of another arrival
    dep = np.full(len(submit), NO_DEP, dtype=np.int64)
    row_of = {int(j): r for r, j in enumerate(np.concatenate([view.running_id, view.pending_id]))
              if j >= 0}
    for k, d in enumerate(view.pending_dep.tolist()):
        if d >= 0 and d in row_of:
            dep[nr + k] = row_of[d]
    if future.arrival_dep is not None and na:
        first = nr + npd + 1
        row_of.update({int(j): first + r for r, j in enumerate(future.arrival_id)})
        for k, d in enumerate(np.asarray(future.arrival_dep).tolist()):
            if d != -1 and d in row_of:
                dep[first + k] = row_of[d]
    # submit order; ties keep the row order (running, then pending by priority, ...)
    order = np.argsort(submit, kind="stable")
    n = len(order)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    pred_index = int(position[nr + npd])
    dep = np.where(dep >= 0, position[np.maximum(dep, 0)], NO_DEP)
    tab = JobTable(
        job_id=np.arange(n).astype(str).astype(object), submit=submit[order], start=start[order],
        end=(start + run)[order], limit=limit[order], run=run[order], nodes=nodes[order],
        user=codes[order], tprio=tprio[order], dep=dep[order],
        users=tuple(str(u) for u in uniq))
    return tab, pred_index


def simulate_x(view: QueueView, future: QueueFuture, cluster: ClusterDescription, *,
               cap_s: int = 48 * HOUR_S) -> float:
    """x_h = successor start - predecessor end (hours) in the world of ``view`` + ``future``
    with the successor (the predecessor's size and limit, the service's user) submitted at
    ``view.now``; +inf when it has not started ``cap_s`` after the predecessor's end (a caller
    that wants only whether x exceeds a tolerance passes that tolerance as ``cap_s``)."""
    cl = twin_cluster(cluster, view)
    tab, pred = world_table(view, future, cl)
    sim = warm_start(tab, cl, int(view.now), warm=True, pinned=False, record=False)
    return _probe_x(sim, view, pred, int(view.now), service_tprio(view, future, cl), cap_s)


def _probe_x(sim, view: QueueView, pred: int, submit: int, succ_tprio: float, cap_s: int) -> float:
    """x_h of a successor submitted at ``submit`` in ``sim`` (standing at the view's time);
    +inf when it has not started ``cap_s`` after the predecessor's end."""
    probe = sim.insert_job(int(submit), int(view.chain_nodes), int(view.pred_limit_s),
                           user=SERVICE_USER, priority=float(succ_tprio))
    if view.pred_running:
        pred_end = int(view.pred_end)
    else:
        if not sim.run_until(int(view.now) + PRED_MAX_WAIT_S, stop_jid=pred):
            return float("inf")
        pred_end = int(sim.now) + int(view.pred_limit_s)
    if probe not in sim.starts and not sim.run_until(pred_end + int(cap_s), stop_jid=probe):
        return float("inf")
    return (sim.starts[probe] - pred_end) / HOUR_S


#: what :func:`true_future` may take from the trace instead of the draw (the ablations of the
#: twin's gap to the oracle: its runtime model, its arrival model, or both)
TRUTHS = ("runtimes", "arrivals", "both")


def true_future(sim: Simulator, view: QueueView, drawn: QueueFuture, truth: str,
                horizon_s: int) -> QueueFuture:
    """``drawn`` with the trace's own values in place of the draws named by ``truth``: the
    recorded runtimes of the running and pending jobs the view shows (``runtimes``), the jobs
    the trace submits in (now, now + ``horizon_s``] (``arrivals``), or both. For measuring
    which part of the twin's model costs it most; a policy never sees this. The scheduler's
    plan (``drawn.plan``: the plan veto's future) is observable, not drawn, and comes back as it
    is: with the truth in it the veto would know the future too."""
    if truth not in TRUTHS:
        raise ValueError(f"truth {truth!r} unknown; use one of {TRUTHS}")
    if drawn.plan:
        return drawn
    table = sim.table
    out = dict(vars(drawn))
    if truth in ("runtimes", "both"):
        def recorded(ids, drawn_run):
            ids = np.asarray(ids, dtype=np.int64)
            mine = (ids >= 0) & (ids < len(table))  # jobs of the trace (not inserted ones)
            return np.where(mine, table.run[np.clip(ids, 0, len(table) - 1)], drawn_run)

        out["running_run"] = recorded(view.running_id, drawn.running_run)
        out["pending_run"] = recorded(view.pending_id, drawn.pending_run)
    if truth in ("arrivals", "both"):
        now = int(view.now)
        a, b = np.searchsorted(table.submit, [now, now + int(horizon_s)], side="right")
        idx = np.arange(a, b)
        idx = idx[table.nodes[idx] <= int(view.capacity)]
        names = np.array([_user_name(table, int(u)) for u in table.user[idx]], dtype=object)
        out.update(arrival_submit=table.submit[idx], arrival_nodes=table.nodes[idx],
                   arrival_limit_s=table.limit[idx], arrival_run=table.run[idx],
                   arrival_user=names, arrival_tprio=table.tprio[idx].astype(float),
                   arrival_id=idx, arrival_dep=table.dep[idx])
    return QueueFuture(**out)


def simulate_pair(view: QueueView, future: QueueFuture, cluster: ClusterDescription, *,
                  step_s: int = 600, cap_s: int = 48 * HOUR_S) -> tuple[float, float]:
    """(x_h submitting now, x_h submitting ``step_s`` later) in one drawn world (common random
    numbers: the same runtimes and arrivals for both); each capped at ``cap_s`` past the
    predecessor's end (the value then is the cap, a lower bound). The later submission is
    never after the predecessor's end."""
    cl = twin_cluster(cluster, view)
    tab, pred = world_table(view, future, cl)
    sim = warm_start(tab, cl, int(view.now), warm=True, pinned=False, record=False)
    later = sim.fork()
    now = int(view.now)
    succ = service_tprio(view, future, cl)
    x_now = _probe_x(sim, view, pred, now, succ, cap_s)
    nxt = now + int(step_s)
    if view.pred_running:
        nxt = min(nxt, int(view.pred_end))
    x_next = _probe_x(later, view, pred, nxt, succ, cap_s)
    cap_h = cap_s / HOUR_S
    return min(x_now, cap_h), min(x_next, cap_h)


def simulate_leads(view: QueueView, future: QueueFuture, cluster: ClusterDescription, *,
                   offsets_s, cap_s: int = 48 * HOUR_S) -> np.ndarray:
    """x_h of the successor submitted at each ``view.now + offset`` (ascending offsets, each no
    later than the predecessor's end) in one drawn world: the same runtimes and arrivals for
    every candidate (common random numbers). The world runs forward once without the
    successor; each candidate is a what-if from the moment of its submit. A candidate whose
    successor has not started ``cap_s`` after the predecessor's end gets the cap (a lower
    bound). Needs a running predecessor (its end is known)."""
    if not view.pred_running:
        raise ValueError("simulate_leads needs a running predecessor (view.pred_running)")
    cl = twin_cluster(cluster, view)
    tab, _ = world_table(view, future, cl)
    sim = warm_start(tab, cl, int(view.now), warm=True, pinned=False, record=False)
    now, end = int(view.now), int(view.pred_end)
    limit_min = -(-int(view.pred_limit_s) // 60)
    succ = service_tprio(view, future, cl)
    cap_h = cap_s / HOUR_S
    out = np.full(len(offsets_s), cap_h)
    for j, off in enumerate(offsets_s):
        t = min(now + int(off), end)
        sim.run_until(t)
        start = what_if(sim.snapshot(), t, int(view.chain_nodes), limit_min, SERVICE_USER,
                        priority=succ, max_wait_s=end + int(cap_s) - t)
        if start is not None:
            out[j] = min((start - end) / HOUR_S, cap_h)
    return out
