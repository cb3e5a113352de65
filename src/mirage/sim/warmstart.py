"""Start a simulation at any time T0 of a trace, with the cluster as the trace says it was.

Warm: the jobs running at T0 run on with their recorded ends; the jobs submitted but not started
by T0 are queued with their real submit times (so their age priority is right). Cold (the
reference's setting): an empty cluster, and only jobs submitted from T0 on exist.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right

import numpy as np

from .engine import INF, Simulator, _Static
from .inference import infer_dependencies
from .jobs import JobTable, to_seconds
from .cluster import ClusterDescription
from .state import SimState

_CACHE: dict = {}


def get_static(table: JobTable, cluster: ClusterDescription, user_max_jobs=None) -> _Static:
    """The shared read-only part of every simulation of (table, cluster description); cached."""
    key = (id(table), cluster, tuple(sorted((user_max_jobs or {}).items())))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is table:
        return hit[1]
    t = table
    if cluster.capacity_infer and not cluster.capacity:
        from .inference import infer_capacity

        cluster = cluster.with_(capacity=tuple(infer_capacity(table)), capacity_infer=False)
    if cluster.infer_dependencies:
        # recorded dependencies are kept; inference only fills jobs without one
        t = table.with_deps(infer_dependencies(table))
    # queue entry: the recorded eligible time where the trace has one (sacct Eligible), else
    # the submit; inferred holds can only push it later
    qtime = t.eligible
    if cluster.infer_holds:
        from .inference import infer_holds

        held = infer_holds(t, cluster)
        qtime = held if qtime is None else np.maximum(qtime, held)
    st = _Static(t, cluster, user_max_jobs, qtime)
    if len(_CACHE) > 32:
        _CACHE.clear()
    _CACHE[key] = (table, st)
    return st


def initial_state(static: _Static, t0: int, *, warm: bool, pinned: bool,
                  exclude=frozenset(), pin_idle_waiters: bool | None = None) -> SimState:
    s = static
    tab = s.table
    exclude = frozenset(int(i) for i in exclude)
    keep = np.ones(s.n, dtype=bool)
    if exclude:
        keep[list(exclude)] = False
    running = []
    pending = []
    if warm or pinned:
        run_idx = np.flatnonzero((tab.start <= t0) & (tab.end > t0) & keep)
        for i in run_idx.tolist():
            running.append((s.rstart[i] + s.run[i], i, s.nodes[i], s.user[i], s.rstart[i] + s.limit[i]))
    if warm and not pinned:
        pend_idx = np.flatnonzero((s.qtime_arr <= t0) & (tab.start > t0) & keep)
        for i in pend_idx.tolist():
            pending.append((s.negkey[i], s.submit[i], i, s.nodes[i], s.limit[i], s.run[i], s.user[i],
                            s.dep[i], s.static[i]))
        nxt = bisect_right(s.arr_time, t0)
    elif pinned:
        nxt = s.n
    else:
        nxt = bisect_left(s.arr_time, t0)
    heapq.heapify(running)
    ujobs: dict = {}
    unodes: dict = {}
    used = 0
    for _, i, n, u, _ in running:
        used += n
        ujobs[u] = ujobs.get(u, 0) + 1
        unodes[u] = unodes.get(u, 0) + n
    ncap = bisect_right(s.cap_times, t0)
    cap = s.cap_nodes[ncap - 1] if ncap > 0 else s.cluster.nodes
    pins: list = []
    if pin_idle_waiters is None:
        pin_idle_waiters = s.cluster.pin_idle_waiters
    if pin_idle_waiters and pending:
        # a job that was queued at T0 although it fitted the idle nodes and its user was under
        # its limit, and that still did not start soon after, was not eligible (held, an account
        # limit, a reservation): it starts when the trace says, not when the model would
        free = cap - used
        keep_pending = []
        for r in pending:
            i, n, u = r[2], r[3], r[6]
            if (n <= free and ujobs.get(u, 0) < s.user_max_jobs.get(u, s.max_jobs)
                    and s.rstart[i] > t0 + s.cluster.pin_idle_grace_s):
                pins.append((s.rstart[i], i))
            else:
                keep_pending.append(r)
        pending = keep_pending
        heapq.heapify(pins)
    pending.sort()
    npin = bisect_right(s.pin_start, t0) if pinned else s.n
    live = frozenset([r[1] for r in running] + [r[2] for r in pending] + [p[1] for p in pins])
    return SimState(
        now=int(t0), nxt=nxt, npin=npin, ncap=ncap, cap=cap, used=used, pending=tuple(pending),
        running=tuple(running), ujobs=tuple(ujobs.items()), unodes=tuple(unodes.items()), live=live,
        inserted=(), extra=(), starts=(), next_jid=s.n, bf_dirty=True,
        last_bf=int(t0) - s.bf_interval, next_bf=INF, dirty=True, exclude=exclude,
        pins=tuple(pins),
    )


def warm_start(table: JobTable, cluster: ClusterDescription, t0=None, *, exclude=(),
               pinned: bool | None = None, warm: bool | None = None, record: bool = True,
               user_max_jobs: dict | None = None) -> Simulator:
    """A simulator standing at ``t0`` (default: the first submit of the trace).

    ``warm`` defaults to the description's ``warm_start``; ``pinned`` to its what-if background
    setting being "pinned". ``exclude``: trace indices that never happen (leave-one-out).
    """
    if not isinstance(table, JobTable):
        # convenience only: build the JobTable once and reuse it, or every call re-prepares
        table = JobTable.from_frame(table)
    if t0 is None:
        t0 = int(table.submit.min()) if len(table) else 0
    t0 = to_seconds(t0)
    warm = cluster.warm_start if warm is None else warm
    pinned = (cluster.whatif_background == "pinned") if pinned is None else pinned
    static = get_static(table, cluster, user_max_jobs)
    state = initial_state(static, t0, warm=warm, pinned=pinned, exclude=exclude)
    sim = Simulator(static, state, pinned=pinned, record=record)
    if record:
        for _, i, _, _, _ in state.running:
            sim.trace_start[i] = static.rstart[i]
    return sim


def replay(table: JobTable, cluster: ClusterDescription, t0=None, t_end=None, **kw) -> np.ndarray:
    """Simulated start of every trace job (-1: not started by ``t_end``) from ``t0``."""
    sim = warm_start(table, cluster, t0, record=True, **kw)
    sim.run_until(INF if t_end is None else to_seconds(t_end))
    return sim.trace_start
