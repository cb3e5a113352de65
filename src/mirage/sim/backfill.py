"""Backfill strategies: what a backfill pass does with the jobs the main scheduler left waiting.

The event loop (``engine.Simulator``) decides when a pass runs (at most once per
``bf_interval``, after something changed); the description's strategy decides what it does. One
class per algorithm, chosen by the cluster description's ``backfill.mode`` (and
``backfill.planner``) through :func:`strategy_for`:

* :class:`NoBackfill` (``none``): no pass at all; jobs start in strict priority order, as the
  main scheduler alone starts them.
* :class:`EasyBackfill` (``easy``): the first tested job that cannot start now gets a
  reservation; a later job starts now only if it does not delay that one.
* :class:`ConservativeBackfill` (``conservative``, what Slurm's sched/backfill does up to
  ``bf_max_job_test``): every tested job, in priority order, gets a reservation; a later job
  starts now only if it delays none of them.
* :class:`SlurmNodeBackfill` (``conservative`` with ``planner: slurm``): sched/backfill 22.05 on
  a partition of one node whose CPUs are the simulated nodes.

A strategy holds no state: one instance serves every simulation of a (trace, description) pair.
``run(sim)`` reads the simulator's queue and running set and starts jobs through
``sim._start`` / ``sim._remove``. A new algorithm is a new subclass of :class:`BackfillStrategy`
plus its line in :data:`STRATEGIES`.
"""

from __future__ import annotations

from bisect import bisect_left

from .freenodes import INF, earliest_fit, fits_now, free_profile
from .records import R_DEP, R_LIMIT, R_NODES, R_USER


class BackfillStrategy:
    """A backfill algorithm. ``passes``: whether the event loop runs passes at all."""

    passes = True

    def run(self, sim) -> None:
        """One pass at ``sim.now``: start now the jobs the algorithm lets start."""
        raise NotImplementedError


class NoBackfill(BackfillStrategy):
    """No backfill: the main scheduler alone, strict priority order."""

    passes = False

    def run(self, sim) -> None:
        return None


class ProfileBackfill(BackfillStrategy):
    """Reservations on the free-nodes profile (``freenodes``) over ``bf_window``.

    Jobs are tested in priority order (up to ``bf_max_job_test``, skipping those held by a
    dependency or a per-user limit); a job whose nodes stay free from now for its limit starts,
    the earliest window in which they do becomes its reservation. Job ends are the limit-based
    expected ends rounded up to ``bf_resolution``, as Slurm plans with limits, not with the
    (unknown) real runtimes. A job that cannot start within the window gets no reservation.
    """

    #: every tested job that cannot start now keeps a reservation (conservative); if False,
    #: only the first one does (EASY)
    reserve_all = True

    def run(self, sim) -> None:
        s = sim.s
        now = sim.now
        res = s.bf_res
        horizon = now + s.bf_window
        reserve_all = self.reserve_all
        times, frees = free_profile(sim, horizon)
        started = []
        tested = 0
        reserved_one = False
        live, ujobs, unodes = sim.live, sim.ujobs, sim.unodes
        umax, mj, mn = s.user_max_jobs, s.max_jobs, s.max_nodes
        # without any per-user limit a job is held only by a dependency
        limits = s.user_limits
        max_test = s.bf_max_test
        whole = s.bf_whole
        exact = s.bf_exact
        lres, lplus = s.bf_lres, s.bf_lplus
        fit = earliest_fit
        # (nodes, rounded limit) -> earliest start found for that shape in this pass, -1: none in
        # the window. The profile only loses free nodes during a pass, so a later job of the
        # same shape cannot fit earlier: its search starts there (or is skipped).
        shape_at: dict = {}
        # The pass only matters through the jobs it starts now. ``wit`` is the position of a job
        # ahead that could still start now (a witness); a job held now stays held through the
        # pass. Once no witness is left, the rest of the pass could only place reservations,
        # which nothing keeps: it stops there.
        # neg[nodes]: the smallest limit known unable to start now (a job at least as large and
        # as long cannot either). A list: only a job that fits in the nodes free now can be a
        # witness, and frees[0] only falls during the pass.
        neg = [INF] * (frees[0] + 1)
        order = sim._ordered()
        nord = len(order)
        i = 0
        scan = 0  # the witness search resumes here (every job before it is no witness)
        wit = -1
        # now + the witness's rounded limit: a reservation from then on takes no node the
        # witness needs, so it can still start now without checking
        wend = now
        while i < nord:
            if wit < i:
                wit = _find_witness(sim, order, scan if scan > i else i, times, frees, neg)
                if wit < 0:
                    break
                scan = wit
                wend = now + -(-order[wit][R_LIMIT] // lres) * lres + lplus
            r = order[i]
            i += 1
            if tested >= max_test:
                break
            n = r[R_NODES]
            # sim._blocked(r, n), inline
            dep = r[R_DEP]
            if dep >= 0 and dep in live:
                continue
            if limits:
                u = r[R_USER]
                if ujobs.get(u, 0) >= umax.get(u, mj) or unodes.get(u, 0) + n > mn:
                    continue
            tested += 1
            lim = -(-r[R_LIMIT] // lres) * lres + lplus
            # search from where this pass last placed the same shape
            shape = (n, lim)
            prev = shape_at.get(shape)
            if prev is None:
                k = fit(times, frees, n, lim)
            elif prev < 0:
                continue  # cannot start within the window: Slurm sets no reservation
            else:
                k = fit(times, frees, n, lim, bisect_left(times, prev))
            if k < 0:
                shape_at[shape] = -1
                continue
            t0 = times[k]
            shape_at[shape] = t0
            if t0 == now:
                sim._start(r)
                started.append(r)
            elif not reserve_all and reserved_one:
                continue
            else:
                reserved_one = True
            # take the job's nodes (it starts now) or its reservation out of the profile
            rs = t0
            nt = len(times)
            if exact and t0 > now:
                # sched/backfill's reservation: [start, start + limit), both rounded down
                rs = t0 - t0 % res
                t1 = t0 + r[R_LIMIT]
                t1 -= t1 % res
                if rs <= now:
                    rs, k = now, 0
                else:
                    k = bisect_left(times, rs)
                    if k == len(times) or times[k] != rs:
                        times.insert(k, rs)
                        frees.insert(k, frees[k - 1])
                nt = len(times)
                if t1 <= rs:
                    t1 = rs  # shorter than the resolution: an empty reservation
            else:
                t1 = t0 + lim
            if t1 < horizon:
                b = bisect_left(times, t1, k + 1)
                if b == nt or times[b] != t1:
                    times.insert(b, t1)
                    frees.insert(b, frees[b - 1])
            else:
                b = nt
            if whole and t0 > now:
                # Slurm reserves the whole node for a job planned for later
                for x in range(k, b):
                    frees[x] = 0
            else:
                for x in range(k, b):
                    frees[x] -= n
            if frees[0] <= 0:
                # nothing else can start now; later reservations would only shape this pass
                break
            if (wit >= i and rs < wend
                    and not _witness_still_fits(sim, order[wit], times, frees, neg)):
                wit = -1
        if sim._track:
            # read: order[:i] and the witnesses found (each the last of a search's reads, and
            # ``scan`` the last found); a search that found none read the rest of the queue only
            # for whether some job there could start now, which does not depend on their order
            sim._fol.read(order, max(i, scan + 1))
        if started:
            sim._remove(started)


class ConservativeBackfill(ProfileBackfill):
    """Conservative backfill: every tested job that cannot start now gets a reservation."""

    reserve_all = True


class EasyBackfill(ProfileBackfill):
    """EASY backfill: only the first tested job that cannot start now gets a reservation."""

    reserve_all = False


def _find_witness(sim, order: list, q: int, times: list, frees: list, neg: list) -> int:
    """The position, from ``q`` on, of the first job in ``order`` that could start now (not
    held, and its nodes free now for its rounded limit), or -1. Each job found unable to start
    now is noted in ``neg``."""
    s = sim.s
    now, lres, lplus = sim.now, s.bf_lres, s.bf_lplus
    live, ujobs, unodes = sim.live, sim.ujobs, sim.unodes
    umax, mj, mn = s.user_max_jobs, s.max_jobs, s.max_nodes
    limits = s.user_limits
    nord = len(order)
    nt = len(times)
    f0 = frees[0]
    while q < nord:
        r = order[q]
        n = r[R_NODES]
        if n <= f0:
            L = r[R_LIMIT]
            if L < neg[n]:
                dep = r[R_DEP]
                if not ((dep >= 0 and dep in live)
                        or (limits and (ujobs.get(r[R_USER], 0) >= umax.get(r[R_USER], mj)
                                        or unodes.get(r[R_USER], 0) + n > mn))):
                    # fits_now(times, frees, now, n, rounded L), inline (frees[0] >= n)
                    tend = now + -(-L // lres) * lres + lplus
                    j = 1
                    while j < nt and times[j] < tend:
                        if frees[j] < n:
                            break
                        j += 1
                    else:
                        return q
                    neg[n] = L
        q += 1
    return -1


def _witness_still_fits(sim, rw: tuple, times: list, frees: list, neg: list) -> bool:
    """Whether the witness ``rw`` can still start now after a reservation took nodes from the
    profile; if not, it is noted in ``neg``."""
    lres, lplus = sim.s.bf_lres, sim.s.bf_lplus
    wn, wl = rw[R_NODES], rw[R_LIMIT]
    if fits_now(times, frees, sim.now, wn, -(-wl // lres) * lres + lplus):
        return True
    if wl < neg[wn]:
        neg[wn] = wl
    return False


class SlurmNodeBackfill(BackfillStrategy):
    """One backfill pass as sched/backfill 22.05 plans a partition of ONE node (``planner:
    slurm``; the simulated "nodes" are its CPUs; plugins/sched/backfill/backfill.c and
    select/cons_common's will-run test):

    * the plan (node_space) holds whole-node reservations on the ``bf_resolution`` grid, from
      the pass's start rounded down to its window's end;
    * a tested job first looks at the window [start_res, start_res + limit] (start_res = now
      at first): a reservation touching it makes the node unavailable, and the test retries
      from the end of the first reservation after which the node is free again (later_start);
    * where the node is available, the will-run test finds its start from the RUNNING jobs
      only (CPU counts, limit-based ends, removed in batches on a 30 s barrier with a window
      that doubles: the start is the last end of the batch that makes room); the plan's
      reservations are not in that test;
    * the job starts now if that start is now; otherwise its reservation is [start, start +
      limit] with both ends rounded down, unless it overlaps a reservation already made
      (then the test retries from that start).

    So a job planned to start when a running job ends can take a reservation whose real
    window runs into a later reservation, as long as the rounded windows do not overlap; the
    profile planner (the default) finds the earliest window that fits everything."""

    def run(self, sim) -> None:
        s = sim.s
        now = sim.now
        res = s.bf_res
        b0 = now - now % res
        wend = now + s.bf_window
        wend -= wend % res
        if wend <= b0:
            wend = b0 + res
        # slot k is [bt[k], bt[k + 1]); free[k]: the node is not reserved then
        bt = [b0, wend]
        free = [True]
        started = []
        tested = 0
        order = sim._ordered()
        for r in order:
            if tested >= s.bf_max_test:
                break
            n = r[R_NODES]
            if sim._blocked(r, n):
                continue
            tested += 1
            if _plan_on_node(sim, r, bt, free):
                sim._start(r)
                started.append(r)
        if sim._track:
            sim._fol.read(order, len(order))
        if started:
            sim._remove(started)


def _plan_on_node(sim, r: tuple, bt: list, free: list) -> bool:
    """Test job ``r`` against the one-node plan (slots ``bt``, ``free``): True if it starts
    now; otherwise its reservation, if it gets one, is marked in the plan."""
    s = sim.s
    now, res = sim.now, s.bf_res
    b0 = bt[0]
    n, lim = r[R_NODES], r[R_LIMIT]
    start_res = now
    while True:
        end_time = (start_res if start_res > now else now) + lim
        avail = True
        later = 0
        nsl = len(free)
        for k in range(nsl):
            e = bt[k + 1]
            if later == 0 and e > start_res and k + 1 < nsl and free[k + 1] and not (avail and free[k]):
                later = e  # the node comes free again at the end of this slot
            if e <= start_res:
                continue
            if bt[k] <= end_time:
                avail = avail and free[k]
            else:
                break
        if not avail:
            if later:
                start_res = later
                continue
            return False  # never within the window: no reservation
        st = _will_run(sim, n)
        if st < start_res:
            st = start_res
        if st <= now:
            return True
        if later and st > later:
            start_res = later
            continue
        if st > now + s.bf_window:
            return False
        rs = st - st % res
        re_ = st + lim
        re_ -= re_ % res
        if any(bt[k + 1] > rs and bt[k] < re_ and not free[k] for k in range(len(free))):
            start_res = st  # overlaps a reservation made before: try from there
            continue
        _reserve_node(bt, free, max(rs, b0), max(re_, rs + res))
        return False


def _will_run(sim, n: int) -> int:
    """select/cons_common's will-run test for ``n`` CPUs on the one node: now if they are free,
    else the running jobs (limit-based ends) are taken off in batches: the first end aligned up
    to a 30 s barrier, every job ending within the window after it removed with it, the window
    doubling after each batch; the start is the last end of the batch that makes room (INF if
    none does)."""
    now = sim.now
    fr = sim.cap - sim.used
    if fr >= n:
        return now
    ends = sorted((exp, m) for _, _, m, _, exp in sim.running)
    window = 30
    barrier = 0
    i, nj = 0, len(ends)
    while i < nj:
        while True:
            exp, m = ends[i]
            if not barrier:
                barrier = exp + (window - exp % window)
            last = exp
            fr += m
            i += 1
            if i == nj or ends[i][0] > barrier + window:
                break
        window *= 2
        while i < nj and ends[i][0] > barrier + window:
            window *= 2
        if fr >= n:
            return last if last > now else now + 1
    return INF


def _reserve_node(bt: list, free: list, a: int, b: int) -> None:
    """Mark the plan's node reserved over [a, b) (both on the resolution grid), splitting the
    slots at a and b; nothing past the plan's end."""
    end = bt[-1]
    if b > end:
        b = end
    if a >= b:
        return
    for t in (a, b):
        k = bisect_left(bt, t)
        if k < len(bt) and bt[k] == t:
            continue
        bt.insert(k, t)
        free.insert(k - 1, free[k - 1])
    for k in range(bisect_left(bt, a), bisect_left(bt, b)):
        free[k] = False


#: the strategy of each ``backfill.mode`` (the profile planner's; ``planner: slurm`` is
#: conservative only, see :func:`strategy_for`)
STRATEGIES = {"easy": EasyBackfill, "conservative": ConservativeBackfill, "none": NoBackfill}


def strategy_for(settings) -> BackfillStrategy:
    """The strategy a description's backfill settings (``cluster.Backfill``) ask for."""
    if settings.planner == "slurm":
        return SlurmNodeBackfill()
    return STRATEGIES[settings.mode]()
