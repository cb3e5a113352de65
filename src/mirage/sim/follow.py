"""Exact reuse between what-if queries: follow an earlier query's trajectory once the states meet.

A sweep of what-ifs (one every 10 minutes of a predecessor's life, `mirage.samples.generate`)
asks the same question of nearly the same cluster again and again: the probe of query k+1 is the
probe of query k submitted 10 minutes later. Each query simulates until its probe starts, often
a day or more on a loaded cluster, and within minutes of simulated time its fork usually reaches
*exactly* the state the previous fork was in at the same instant (the same jobs pending and
running with the same ends, the same backfill clock), apart from the probe itself.

From such an instant on, the two forks take the same decisions as long as the two probes sit at
the same place in the priority order, because every decision depends on the probe only through
its rank and its (equal) size, limit and user. Their ranks can differ only while some job's
priority lies between the two probes' priorities (the probes differ only in age, so that band is
``age_rate * (difference of their submits)`` wide):

* an uncapped job whose ``negkey`` lies in the band (fixed: every uncapped job ages alike), while
  it is pending and uncapped;
* a job whose age is capped (its priority stops growing), while the two probes sweep past its
  frozen priority (a window of the submit difference, located exactly).

The follower therefore

1. simulates normally, recording after every scheduling step a digest of the state (hashes of the
   pending records other than the probe and of the running records, the counters and the
   backfill clock) and the decisions taken (the jobs started, the flags);
2. when its digest equals the earlier query's digest at the same instant, computes those windows
   over the rest of the earlier trajectory (up to the earlier probe's start);
3. replays the earlier query's decisions (cheap: no scheduler pass), except inside the windows,
   where it runs the real scheduler and checks that it decides the same (if not, it has diverged
   and simply goes on simulating, trying to meet again later);
4. once no window is left, the answer is the earlier probe's start: the rest is the same.

The result is identical to a plain simulation (tested against one); the digests are sums of
Python's 64-bit tuple hashes, so a false match needs a hash collision of the pending and the
running sets at once. Each query leaves its own trajectory (its decisions, digests and job starts,
the earlier query's where it followed it) for the next query.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter

from mirage.units import INF

# record fields (see engine): negkey, submit, jid, nodes, limit, run, user, dep, static
_NEGKEY, _SUBMIT, _JID, _STATIC = 0, 1, 2, 8


class Trajectory:
    """What one what-if fork did, from its probe's submit to its probe's start."""

    __slots__ = ("static", "sig", "t_p", "start", "log", "dig", "starts", "shallow")

    def __init__(self, static, sig, t_p, start, log, dig, starts, shallow=frozenset()):
        self.static = static
        self.sig = sig  # (jid, nodes, limit, run, user, static priority, dep) of the probe
        self.t_p = t_p  # the probe's submit
        self.start = start  # the probe's start
        # (time, k) of each scheduling step (k > 0: a job started at that time also ended then)
        self.log = log  # (time, k) -> (started jids, dirty, bf_dirty, last_bf, next_bf) after it
        self.dig = dig  # (time, k) -> state digest after the step
        self.starts = starts  # jid -> start of every job started on the way
        # the steps whose passes read no pending record from the probe's on (see Follower.read)
        self.shallow = shallow


#: how often queries met an earlier trajectory ("met"), left it again ("diverged"), took the
#: earlier answer ("answered") and replayed a step inside a rank window because the earlier
#: step read only records ahead of the probe ("shallow"): for diagnostics and tests, never read
#: by the simulation
STATS: Counter = Counter()


class Follower:
    """Attached to a what-if fork (``Simulator._fol``); drives its scheduling steps."""

    def __init__(self, sim, probe: int, ref: Trajectory | None, t_end: int):
        self.probe = probe
        ex = sim.extra[probe]
        self.t_p = ex[0]
        self.sig = (probe,) + tuple(ex[1:])
        if ref is not None and not (ref.static is sim.s and ref.sig == self.sig
                                    and ref.start is not None and ref.start <= t_end):
            ref = None
        self.ref = ref
        # the earlier probe is older, so it ranks ahead of this one at every instant: the two
        # priority orders share every record ahead of the earlier probe (see _shallow_in_ref)
        self._older_ref = ref is not None and ref.t_p < self.t_p
        self.log: dict = {}
        self.dig: dict = {}
        self.starts: dict = {}
        self.shallow: set = set()
        self.deep = False  # the current step's passes read the probe's record (or past it)
        self._prec = None  # the probe's pending record, once queued
        self.cur: list = []
        self.following = False
        self.windows: list = []
        self.done_at = None  # step from which the answer was taken from ``ref``
        self._lt, self._k = None, 0  # steps are keyed (time, k): a job may end when it starts
        sim._dp = sum(hash(r) for r in sim.pending if r[_JID] != probe)
        sim._dr = sum(map(hash, sim.running))
        self._ctx = (hash(sim.exclude), sim.pinned)
        sim._fol = self
        sim._track = True

    # ------------------------------------------------------------------ hooks from the engine
    def started(self, jid: int, now: int) -> None:
        self.cur.append(jid)
        self.starts[jid] = now

    def step(self, sim, t: int) -> bool:
        """One scheduling step at ``t``; True when the probe's start is known."""
        if t == self._lt:
            self._k += 1
        else:
            self._lt, self._k = t, 0
        key = (t, self._k)
        if self.following:
            return self._follow(sim, t, key)
        self.cur = []
        self.deep = False
        sim._schedule()
        if sim.stop_hit:
            return True
        d = self._digest(sim)
        self.log[key] = (tuple(self.cur), sim.dirty, sim.bf_dirty, sim.last_bf, sim.next_bf)
        self.dig[key] = d
        if not self.deep:
            self.shallow.add(key)
        ref = self.ref
        if ref is not None and ref.dig.get(key) == d and t < ref.start:
            w = self._windows(sim, t)
            if w is not None:
                STATS["met"] += 1
                self.windows, self.following = w, True
                return self._done_if_clear(sim, t, key)
        return False

    # ------------------------------------------------------------------ following
    def _follow(self, sim, t: int, key) -> bool:
        ref = self.ref
        e = ref.log.get(key)
        if self.windows and self.windows[0][1] < t:
            self.windows = [w for w in self.windows if w[1] >= t]
        if e is None or (self._differs(sim, t) and not self._shallow_in_ref(sim, key)):
            # inside a window: decide for real and check that the decision is the same
            self.cur = []
            self.deep = False
            sim._schedule()
            mine = (tuple(self.cur), sim.dirty, sim.bf_dirty, sim.last_bf, sim.next_bf)
            if not self.deep:
                self.shallow.add(key)
            if mine != e:
                STATS["diverged"] += 1
                self.following = False
                if sim.stop_hit:
                    return True
                self.log[key] = mine
                self.dig[key] = self._digest(sim)
                return False
            if sim.stop_hit:
                return True
        else:
            # the same step as the earlier query's: it reads what that one read
            if key in ref.shallow:
                self.shallow.add(key)
            started = e[0]
            if started:
                want = set(started)
                recs = {r[_JID]: r for r in sim.pending if r[_JID] in want}
                self.cur = []
                for j in started:
                    sim._start(recs[j])
                sim._remove(list(recs.values()))
                if sim.stop_hit:
                    return True
            sim.dirty, sim.bf_dirty, sim.last_bf, sim.next_bf = e[1], e[2], e[3], e[4]
        self.log[key] = e
        self.dig[key] = ref.dig[key]
        return self._done_if_clear(sim, t, key)

    def _shallow_in_ref(self, sim, key) -> bool:
        """Whether this step is sure to decide as the earlier query's did although a job's rank
        relative to the probe may differ: the earlier step's passes read only records ranked
        ahead of its probe (``ref.shallow``), and this probe is queued and younger.

        Exact: the states differ only in the probe's submit, so the earlier probe ranks ahead of
        this one and every record ahead of the earlier probe is ranked the same in both queues.
        The passes read the queue in order, and a pass's decisions depend only on what it read,
        so both read the same records and decide the same. The one read past that point, a
        backfill witness search that found no job able to start now, asks that of a set of
        records that is the same in both queues (the probes differ in nothing it looks at).
        """
        if self._older_ref and key in self.ref.shallow and self.probe in sim.live:
            STATS["shallow"] += 1
            return True
        return False

    def read(self, order: list, depth: int) -> None:
        """Engine hook: a pass read ``order[:depth]`` (and nothing else whose order matters);
        notes whether that included the probe's record."""
        if self.deep or depth <= 0:
            return
        prec = self._prec
        if prec is None:
            probe = self.probe
            for r in order:
                if r[_JID] == probe:
                    prec = self._prec = r
                    break
            else:
                return  # the probe is not queued: no order differs
        try:
            order.index(prec, 0, depth)
        except ValueError:
            return
        self.deep = True

    def _differs(self, sim, t: int) -> bool:
        """Whether a job whose rank may differ from the probe's is pending and eligible now. A job
        held by a dependency or a per-user limit when a step starts stays held through it and is
        skipped by both passes, so its rank cannot matter."""
        s = sim.s
        for lo, hi, j in self.windows:
            if lo <= t <= hi:
                if j < s.n:
                    dep, u, n = s.dep[j], s.user[j], s.nodes[j]
                else:
                    ex = sim.extra[j]
                    dep, u, n = ex[6], ex[4], ex[1]
                if dep >= 0 and dep in sim.live:
                    continue
                if sim.ujobs.get(u, 0) >= s.user_max_jobs.get(u, s.max_jobs):
                    continue
                if sim.unodes.get(u, 0) + n > s.max_nodes:
                    continue
                return True
        return False

    def _done_if_clear(self, sim, t: int, key) -> bool:
        if any(w[1] > t for w in self.windows):
            return False
        # nothing can set the two forks apart any more: the probe starts when the earlier one did
        sim.starts[self.probe] = self.ref.start
        self.done_at = key
        STATS["answered"] += 1
        return True

    def _windows(self, sim, tm: int):
        """(lo, hi, jid): from lo to hi (after ``tm``) job jid may sit between the two probes
        in the priority order; None when following is not safe at all (a probe would reach the
        age cap)."""
        s = sim.s
        ref = self.ref
        end = ref.start
        rate, m, capped = s.age_rate, s.max_age, s.age_capped
        tx, ty = ref.t_p, self.t_p
        t_lo, t_hi = min(tx, ty), max(tx, ty)
        if capped and end >= t_lo + m - 2:
            return None
        stp = self.sig[5]
        nkx, nky = -(stp - rate * tx), -(stp - rate * ty)
        # float keys are within a few ulps of the exact ones; the margin is far wider than that
        eps = 1e-6 + 1e-10 * (abs(nkx) + abs(nky) + abs(stp) + abs(s.w_age))
        lo_nk, hi_nk = min(nkx, nky) - eps, max(nkx, nky) + eps
        starts = ref.starts
        out = []

        def consider(sub, nk, st, jid):
            leave = starts.get(jid, INF)
            if lo_nk <= nk <= hi_nk:
                out.append((max(tm, sub), (min(leave, sub + m) if capped else leave) + 1, jid))
            if capped:
                # the probes' priorities st_p + rate * (x - t_p) pass the frozen st + rate * m
                cross = (st + rate * m - stp) / rate
                lo = max(t_lo + cross - 2, sub + m)
                hi = min(t_hi + cross + 2, leave)
                if lo <= hi:
                    out.append((lo, hi, jid))

        probe = self.probe
        for r in sim.pending:
            if r[_JID] != probe:
                consider(r[_SUBMIT], r[_NEGKEY], r[_STATIC], r[_JID])
        if not sim.pinned:
            excl = sim.exclude
            sub_, nk_, st_, order = s.submit, s.negkey, s.static, s.arr_order
            for k in range(sim.nxt, bisect_right(s.arr_time, end)):
                i = order[k]
                if i not in excl:
                    consider(sub_[i], nk_[i], st_[i], i)
        for sub, jid in sim.inserted:
            if jid != probe and sub <= end:
                st = sim.extra[jid][5]
                consider(sub, -(st - rate * sub), st, jid)
        return sorted(iv for iv in out if iv[1] >= tm and iv[0] <= end)

    def _digest(self, sim) -> tuple:
        ins = 0
        if sim.inserted:
            probe = self.probe
            ins = hash(tuple(sorted((sub, j, sim.extra[j]) for sub, j in sim.inserted if j != probe)))
        pins = hash(tuple(sorted(sim.pins))) if sim.pins else 0
        return (sim._dp, sim._dr, len(sim.pending), len(sim.running), sim.used, sim.cap, sim.nxt,
                sim.npin, sim.ncap, sim.next_jid, sim.last_bf, sim.next_bf, sim.bf_dirty, sim.dirty,
                ins, pins, self._ctx)

    # ------------------------------------------------------------------ result
    def trajectory(self, sim, start) -> Trajectory | None:
        if start is None:
            return None
        log, dig, starts = self.log, self.dig, self.starts
        if self.done_at is not None:
            ref, t0 = self.ref, self.done_at
            log.update({k: e for k, e in ref.log.items() if k > t0})
            dig.update({k: d for k, d in ref.dig.items() if k > t0})
            starts.update({j: x for j, x in ref.starts.items() if x >= t0[0]})
            self.shallow.update(k for k in ref.shallow if k > t0)
        return Trajectory(sim.s, self.sig, self.t_p, start, log, dig, starts, self.shallow)
