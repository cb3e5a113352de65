"""What a trace does not record but its timing betrays: capacity, dependencies, user limits.

Each inference is a pure function of the job table. They read recorded start times, so when a
fidelity test predicts a job's start, the inferences about that job itself must be dropped
(``mirage.sim.fidelity`` does this), or the answer would leak into the question.
"""

from __future__ import annotations

import numpy as np

from .jobs import NO_DEP, JobTable
from mirage.units import DAY_S


def busy_nodes(table: JobTable) -> tuple[np.ndarray, np.ndarray]:
    """Step function of nodes in use: (times, busy after each time), from recorded starts/ends."""
    t = np.concatenate([table.start, table.end])
    dn = np.concatenate([table.nodes, -table.nodes])
    order = np.lexsort((dn, t))  # ends before starts at the same second
    return t[order], np.cumsum(dn[order])


def infer_capacity(table: JobTable, period_s: int = 7 * DAY_S,
                   monotone: bool = False, until: int | None = None) -> list[tuple[int, int]]:
    """A capacity schedule from concurrent usage: 0 before the first recorded start (the
    partition is not open), then, per period from the first start, the peak of concurrent busy
    nodes in that period.

    A peak is a lower bound on what was usable; taking it per period (not over the whole trace)
    follows nodes that were down or drained for a while, which a site's "84 nodes" does not.
    ``monotone``: never lower capacity (a running maximum) instead. ``until``: only the busy
    nodes before it count, and the periods are counted back from it (the last one ends there):
    a training window's jobs drain after its end and nothing new arrives, so a period running
    past it, or cut short by it, would read the drain as a drop in capacity.
    """
    if len(table) == 0:
        return []
    t, busy = busy_nodes(table)
    first = int(table.start.min())
    end = int(t.max()) + 1
    a0 = first
    if until is not None:
        end = max(int(until), first + 1)
        a0 = end - -(-(end - first) // period_s) * period_s
    out: list[tuple[int, int]] = [(int(table.submit.min()) - 1, 0)]
    best = 0
    for a in range(a0, end, period_s):
        lo, hi = np.searchsorted(t, [a, min(a + period_s, end)], side="left")
        k0 = max(lo - 1, 0)
        peak = int(busy[k0:hi].max()) if hi > k0 else 0
        best = max(best, peak) if monotone else peak
        if out[-1][1] != best:
            out.append((max(a, first), best))
    return out


def infer_dependencies(table: JobTable, min_wait_s: int = 600, gap_s: int = 120) -> np.ndarray:
    """A job that waited at least ``min_wait_s`` and started within ``gap_s`` after a job of the
    same user (submitted no later than it) ended is taken to depend on that job.

    Sacct does not record ``--dependency``; on ls6 many long waits end exactly when one of the
    user's own jobs ends (a chain, or a per-user limit), which a resource model cannot explain.
    """
    dep = table.dep.copy()
    wait = table.start - table.submit
    cand = np.flatnonzero((wait >= min_wait_s) & (dep == NO_DEP))
    if len(cand) == 0:
        return dep
    by_user: dict[int, np.ndarray] = {}
    order = np.lexsort((table.end, table.user))
    users_sorted = table.user[order]
    bounds = np.flatnonzero(np.diff(users_sorted)) + 1
    for chunk in np.split(order, bounds):
        if len(chunk):
            by_user[int(table.user[chunk[0]])] = chunk
    for i in cand:
        jobs = by_user.get(int(table.user[i]))
        if jobs is None:
            continue
        ends = table.end[jobs]
        lo = np.searchsorted(ends, table.start[i] - gap_s, side="left")
        hi = np.searchsorted(ends, table.start[i], side="right")
        best = NO_DEP
        for k in jobs[lo:hi][::-1]:  # latest end first
            if k != i and table.submit[k] <= table.submit[i] and table.start[k] < table.start[i]:
                best = int(k)
                break
        dep[i] = best
    return dep


def infer_user_max_jobs(table: JobTable) -> dict[int, int]:
    """The most jobs each user ever had running at once (a lower bound on their QOS limit)."""
    return _user_peaks(table, np.ones(len(table), dtype=np.int64))


def infer_user_max_nodes(table: JobTable) -> dict[int, int]:
    """The most nodes each user ever had running at once (a lower bound on a node limit)."""
    return _user_peaks(table, table.nodes)


def _user_peaks(table: JobTable, weight: np.ndarray) -> dict[int, int]:
    """Per user, the peak of ``weight`` summed over the user's running jobs."""
    out: dict[int, int] = {}
    order = np.lexsort((table.start, table.user))
    users_sorted = table.user[order]
    bounds = np.flatnonzero(np.diff(users_sorted)) + 1
    for chunk in np.split(order, bounds):
        if not len(chunk):
            continue
        t = np.concatenate([table.start[chunk], table.end[chunk]])
        d = np.concatenate([weight[chunk], -weight[chunk]])
        o = np.lexsort((d, t))  # ends before starts at the same second
        out[int(table.user[chunk[0]])] = int(np.cumsum(d[o]).max())
    return out


def infer_holds(table: JobTable, cluster, min_wait_s: int = 600) -> np.ndarray:
    """Queue entry time of every job: its submit, or the end of an inferred hold.

    While job j waited, a job k that the priority model ranks no higher than j, that is at least
    as large and at least as long, cannot have started ahead of j by backfill or priority; so j
    was not eligible then (held, a limit of its account, a reservation). j is taken as eligible
    from the last such start. Uses recorded starts of other jobs (and j's own start as the end of
    its wait), so a replay with holds is partly circular; see docs/sim.md.
    """
    pr = cluster.priority
    rate = pr.weight_age / max(1, pr.max_age_s)
    m = pr.max_age_s
    base = pr.weight_trace * table.tprio + pr.weight_size / cluster.nodes * table.nodes
    order = np.argsort(table.start, kind="stable")
    st_sorted = table.start[order]
    q = table.submit.copy()
    wait = table.start - table.submit
    for j in np.flatnonzero(wait >= min_wait_s).tolist():
        lo = np.searchsorted(st_sorted, table.submit[j], side="right")
        hi = np.searchsorted(st_sorted, table.start[j], side="left")
        if hi <= lo:
            continue
        ks = order[lo:hi]
        t = table.start[ks]
        pj = base[j] + rate * np.minimum(t - table.submit[j], m)
        pk = base[ks] + rate * np.minimum(np.maximum(t - table.submit[ks], 0), m)
        over = (pk <= pj) & (table.nodes[ks] >= table.nodes[j]) & (table.limit[ks] >= table.limit[j])
        over &= ks != j
        if over.any():
            q[j] = int(t[over].max())
    return q
