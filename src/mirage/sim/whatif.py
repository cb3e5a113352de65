"""What-if queries: "a job of N nodes and limit L submitted at s: when does it start?"

Every answer comes from a snapshot (a fork of a running simulation), never from a replay of the
window. A query only simulates until its probe starts, so its cost is the probe's wait, not the
window's length. :func:`sweep_successor` answers the provisioning question for every decision
point of one predecessor's life by advancing one base simulation in steps and forking at each.
"""

from __future__ import annotations

from dataclasses import dataclass

from .engine import SERVICE_USER, Simulator
from .follow import Follower
from .jobs import SimInputError, to_seconds
from .state import Snapshot
from mirage.units import DAY_S, DECISION_STEP_S, HOUR_S

DEFAULT_MAX_WAIT_S = 30 * DAY_S


def _user_code(sim_or_static, user) -> int:
    if user is None:
        return SERVICE_USER
    if isinstance(user, (int,)) and not isinstance(user, bool):
        return int(user)
    return sim_or_static.table.user_code(user)


# the trajectory of the last what-if, which the next one may follow (mirage.sim.follow)
_LAST: list = [None]


def clear_reuse() -> None:
    """Forget the last what-if's trajectory (frees its memory; results never depend on it)."""
    _LAST[0] = None


def what_if(base: Simulator | Snapshot, submit, nodes: int, limit_min: int, user=None, *,
            run_min: int | None = None, priority: float | None = None,
            max_wait_s: int = DEFAULT_MAX_WAIT_S, reuse: bool = True) -> int | None:
    """Start time (epoch s) of a job submitted at ``submit`` into a copy of ``base``.

    ``base`` is not changed. ``run_min`` defaults to the limit (a service job). ``None`` when the
    job has not started ``max_wait_s`` after its submit (e.g. more nodes than the cluster has).
    ``reuse``: once this query's simulation meets the previous query's in the same state, follow
    it instead of re-deciding (:mod:`mirage.sim.follow`; the answer is the same, only faster:
    the 10-minute sweeps of a predecessor's life cost a fraction of independent queries).
    """
    sim = Simulator.restore(base) if isinstance(base, Snapshot) else base.fork()
    submit = to_seconds(submit)
    if submit < sim.now:
        raise SimInputError(
            f"what-if submit time {submit} is before the snapshot's time {sim.now}. "
            "Fix: take the snapshot at or before the submit time"
        )
    jid = sim.insert_job(submit, int(nodes), int(limit_min) * 60,
                         run_s=None if run_min is None else int(run_min) * 60,
                         user=_user_code(sim.s, user), priority=priority)
    t_end = submit + max_wait_s
    if sim.s.integer or sim.s.bf_aligned:
        # integer priorities reorder the queue as ages cross whole points, and an aligned pass
        # runs outside the follower's steps: the reuse's premises do not hold
        reuse = False
    if not reuse:
        return sim.starts[jid] if sim.run_until(t_end, stop_jid=jid) else None
    # most probes start at their submit: only a query that waits is worth following or keeping
    # (running up to the submit first and on from there is the same simulation)
    if sim.run_until(submit, stop_jid=jid):
        return sim.starts[jid]
    fol = Follower(sim, jid, _LAST[0], t_end)
    start = sim.starts[jid] if sim.run_until(t_end, stop_jid=jid) else None
    _LAST[0] = fol.trajectory(sim, start)
    return start


@dataclass(frozen=True)
class SweepPoint:
    t: int  # decision time = the successor's submit time
    start: int | None  # the successor's simulated start
    pred_end: int  # the predecessor's end (known once it started: it runs to its limit)
    x_h: float | None  # start - pred_end in hours (> 0 interruption, < 0 overlap)


def sweep_successor(base: Simulator, pred_jid: int, *, nodes: int, limit_min: int, user=None,
                    step_s: int = DECISION_STEP_S, max_wait_s: int = DEFAULT_MAX_WAIT_S) -> list[SweepPoint]:
    """Outcome of submitting the successor at every ``step_s`` of the predecessor's life.

    ``base`` must hold the predecessor (``insert_job``) and stand at or before its submit; it is
    advanced in place. Decision points run from the predecessor's submit while it is pending or
    running; the last point is its end (the reactive submit).
    """
    if pred_jid < base.s.n:
        raise SimInputError("sweep_successor needs an inserted predecessor (a jid from insert_job)")
    p_submit, _, p_limit, p_run, _, _, _ = base.extra[pred_jid]
    ucode = _user_code(base.s, user)
    out: list[SweepPoint] = []
    t = max(p_submit, base.now)
    while True:
        st = base.starts.get(pred_jid)
        if st is not None and t >= st + p_run:
            t = max(st + p_run, base.now)
        base.run_until(t)
        snap = base.snapshot()
        s = what_if(snap, t, nodes, limit_min, ucode, max_wait_s=max_wait_s)
        st = base.starts.get(pred_jid)
        pe = (st + p_run) if st is not None else -1
        out.append(SweepPoint(t=t, start=s, pred_end=pe,
                              x_h=None if (s is None or st is None) else (s - pe) / HOUR_S))
        if st is not None and t >= st + p_run:
            break
        t += step_s
        if st is None and t - p_submit > max_wait_s:
            break
    # the predecessor's end is only known once it started; fill it in for earlier points
    st = base.starts.get(pred_jid)
    if st is not None:
        pe = st + p_run
        out = [SweepPoint(p.t, p.start, pe, None if p.start is None else (p.start - pe) / HOUR_S)
               for p in out]
    return out
