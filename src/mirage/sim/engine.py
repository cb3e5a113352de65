"""The event-driven Slurm model: event loop, main scheduler, backfill.

Time jumps from event to event (a job ends, a capacity change, a submit, a pinned start, a
deferred backfill pass); the schedulers run only after something changed, because nothing else
can let a job start. Allocation is whole nodes. Trace jobs run for their recorded runtime capped
at their limit; inserted service jobs run to their limit unless told otherwise.

Pure Python on purpose: the profile of a full ls6 replay is dominated by dict/heap work per event,
which numpy cannot batch; see docs/sim.md for the measurements.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from .freenodes import INF, free_profile
from .jobs import NO_DEP, JobTable, SimInputError
from .cluster import ClusterDescription
from .state import SimState, Snapshot

#: an inserted job without a user belongs to this pseudo user (the service being provisioned)
SERVICE_USER = -2

# Pending records are tuples, sorted ascending, so the highest priority comes first:
#   (negkey, submit, jid, nodes, limit, run, user, dep, static)
# negkey = -(static - w_age * submit / max_age): the order of jobs by Slurm priority does not
# change with time while no job's age has reached max_age, so the queue stays sorted by insort.
R_NEGKEY, R_SUBMIT, R_JID, R_NODES, R_LIMIT, R_RUN, R_USER, R_DEP, R_STATIC = range(9)
_SUBMIT_OF = itemgetter(R_SUBMIT)


class PriorityTerms(NamedTuple):
    """A description's multifactor priority as the engine computes it: a job's priority is
    ``w_trace * tprio + size_norm * nodes + age_rate * age``, its age capped at ``max_age``
    where ``age_capped``."""

    w_age: float
    max_age: int
    age_rate: float
    age_capped: bool
    size_norm: float
    w_trace: float


def priority_terms(cluster: ClusterDescription) -> PriorityTerms:
    pr = cluster.priority
    w_age, max_age = float(pr.weight_age), max(1, int(pr.max_age_s))
    return PriorityTerms(w_age, max_age, w_age / max_age, bool(pr.age_capped) and w_age > 0,
                         float(pr.weight_size) / float(cluster.nodes), float(pr.weight_trace))


class _Static:
    """Per (trace, cluster description) data every simulation and fork shares read-only."""

    def __init__(self, table: JobTable, cluster: ClusterDescription, user_max_jobs=None,
                 qtime: np.ndarray | None = None):
        self.table = table
        self.cluster = cluster
        (self.w_age, self.max_age, self.age_rate, self.age_capped, self.size_norm,
         self.w_trace) = priority_terms(cluster)
        n = len(table)
        self.n = n
        static = self.w_trace * table.tprio + self.size_norm * table.nodes
        self.static = static.tolist()
        # queue entry time: the submit, or the end of an inferred hold (Slurm's eligible time,
        # from which the age factor also counts)
        qtime = table.submit if qtime is None else np.maximum(np.asarray(qtime), table.submit)
        self.qtime_arr = qtime
        self.negkey = (-(static - self.age_rate * qtime)).tolist()
        self.submit = qtime.tolist()
        self.arr_order = np.argsort(qtime, kind="stable").tolist()
        self.arr_time = qtime[self.arr_order].tolist() if n else []
        self.rstart = table.start.tolist()
        self.nodes = table.nodes.tolist()
        self.limit = table.limit.tolist()
        self.run = table.run.tolist()
        self.user = table.user.tolist()
        self.dep = table.dep.tolist()
        self.pin_order = np.argsort(table.start, kind="stable").tolist()
        self.pin_start = table.start[self.pin_order].tolist() if n else []
        self.cap_times = [t for t, _ in cluster.capacity]
        self.cap_nodes = [c for _, c in cluster.capacity]
        self.max_jobs = cluster.max_jobs_per_user if cluster.max_jobs_per_user is not None else INF
        self.max_nodes = cluster.max_nodes_per_user if cluster.max_nodes_per_user is not None else INF
        self.user_max_jobs = dict(user_max_jobs or {})
        # whether any per-user limit can hold a job (if not, the passes skip the counters)
        self.user_limits = bool(self.user_max_jobs) or self.max_jobs < INF or self.max_nodes < INF
        # the recorded-priority component of an inserted job given none (JobTable.inserted_tprio)
        self.inserted_tprio = (float(table.inserted_tprio) if table.inserted_tprio is not None
                               else float(np.median(table.tprio)) if n else 0.0)
        bf = cluster.backfill
        self.bf_mode = bf.mode
        self.bf_interval = int(bf.interval_s)
        self.bf_window = int(bf.window_min) * 60
        self.bf_res = max(1, int(bf.resolution_s))
        self.bf_max_test = int(bf.max_job_test)
        self.bf_whole = bool(bf.whole_node)
        self.bf_node = bf.planner == "slurm"
        self.integer = bool(cluster.priority.integer)
        self.calc_period = int(cluster.priority.calc_period_s)
        self.calc_phase = int(cluster.priority.calc_phase_s)
        self.bf_aligned = bool(bf.aligned) and self.bf_interval > 0
        # submit times for integer priorities' ties (the records carry the queue entry)
        self.submit_of = table.submit.tolist() if self.integer else None
        # window rounding: a tested job's window is its limit rounded up to bf_lres, plus
        # bf_lplus (1: an end touching a reservation overlaps it); running jobs' ends are
        # rounded up to bf_pres in the profile; bf_exact: reservations floored to bf_res
        self.bf_exact = bf.window_rounding == "slurm"
        self.bf_lres = 1 if self.bf_exact else self.bf_res
        self.bf_lplus = 1 if self.bf_exact else 0
        self.bf_pres = 1 if self.bf_exact else self.bf_res


class Simulator:
    """One simulated cluster. Build it with :func:`mirage.sim.warmstart.warm_start`.

    ``pinned``: trace jobs start at their recorded start whatever the state (the background is
    history); only inserted jobs are scheduled. ``record``: keep the start of every trace job.
    """

    def __init__(self, static: _Static, state: SimState, *, pinned: bool = False,
                 record: bool = False):
        self.s = static
        self.pinned = pinned
        self.record = record
        self.trace_start = np.full(static.n, -1, dtype=np.int64) if record else None
        self._restore(state)
        self.stop_hit = False
        self.stop_jid = -1
        # what-if trajectory following (see mirage.sim.follow); off unless track() is called
        self._track = False
        self._fol = None

    # ------------------------------------------------------------------ state
    def _restore(self, st: SimState) -> None:
        self.now = st.now
        self.nxt = st.nxt
        self.npin = st.npin
        self.ncap = st.ncap
        self.cap = st.cap
        self.used = st.used
        self.pending = list(st.pending)
        self.running = list(st.running)
        self.ujobs = dict(st.ujobs)
        self.unodes = dict(st.unodes)
        self.live = set(st.live)
        self.inserted = list(st.inserted)
        self.extra = dict(st.extra)
        self.starts = dict(st.starts)
        self.next_jid = st.next_jid
        self.bf_dirty = st.bf_dirty
        self.last_bf = st.last_bf
        self.next_bf = st.next_bf
        self.dirty = st.dirty
        self.exclude = st.exclude
        self.pins = list(st.pins)

    def snapshot(self) -> Snapshot:
        """The current point of the simulation; cheap (shallow copies of small containers)."""
        return Snapshot(self.s, self.state(), self.pinned)

    def state(self) -> SimState:
        return SimState(
            now=self.now, nxt=self.nxt, npin=self.npin, ncap=self.ncap, cap=self.cap,
            used=self.used, pending=tuple(self.pending), running=tuple(self.running),
            ujobs=tuple(self.ujobs.items()), unodes=tuple(self.unodes.items()),
            live=frozenset(self.live), inserted=tuple(self.inserted),
            extra=tuple(self.extra.items()), starts=tuple(self.starts.items()),
            next_jid=self.next_jid, bf_dirty=self.bf_dirty, last_bf=self.last_bf,
            next_bf=self.next_bf, dirty=self.dirty, exclude=self.exclude,
            pins=tuple(self.pins),
        )

    def fork(self, record: bool = False) -> "Simulator":
        """An independent copy of this simulation from now on."""
        return Simulator(self.s, self.state(), pinned=self.pinned, record=record)

    @classmethod
    def restore(cls, snapshot: Snapshot, record: bool = False) -> "Simulator":
        """A fresh simulator continuing from ``snapshot`` (which stays reusable)."""
        return cls(snapshot.static, snapshot.state, pinned=snapshot.pinned, record=record)

    @property
    def table(self) -> JobTable:
        return self.s.table

    @property
    def cluster(self) -> ClusterDescription:
        return self.s.cluster

    # ------------------------------------------------------------------ queries
    @property
    def free(self) -> int:
        return self.cap - self.used

    def start_of(self, jid: int):
        if jid >= self.s.n:
            return self.starts.get(jid)
        if self.trace_start is not None and self.trace_start[jid] >= 0:
            return int(self.trace_start[jid])
        return None

    def end_of(self, jid: int):
        st = self.start_of(jid)
        if st is None:
            return None
        run = self.extra[jid][3] if jid >= self.s.n else self.s.run[jid]
        return st + run

    def running_jobs(self) -> list[tuple]:
        """(jid, start, expected_end, nodes, user) of every running job."""
        out = []
        for end, jid, n, u, exp in self.running:
            lim = self.extra[jid][2] if jid >= self.s.n else self.s.limit[jid]
            out.append((jid, exp - lim, exp, n, u))
        return out

    def pending_jobs(self) -> list[tuple]:
        """(jid, submit, nodes, limit_s, user) of every pending job, in priority order."""
        return [(r[R_JID], r[R_SUBMIT], r[R_NODES], r[R_LIMIT], r[R_USER]) for r in self._ordered()]

    def advance(self, t) -> None:
        """Process every event up to time ``t`` (epoch seconds or a timestamp)."""
        from .jobs import to_seconds

        self.run_until(to_seconds(t))

    # ------------------------------------------------------------------ inserting
    def insert_job(self, submit: int, nodes: int, limit_s: int, *, run_s: int | None = None,
                   user: int = SERVICE_USER, priority: float | None = None,
                   depends_on: int = NO_DEP) -> int:
        """Queue a job that the trace does not hold; returns its jid (>= number of trace jobs).

        ``run_s`` defaults to the limit (a chained service job runs until it is killed).
        ``priority`` is the recorded-priority component (default: the table's
        ``inserted_tprio``; unless set, the trace's median).
        """
        s = self.s
        submit = int(submit)
        if submit < self.now:
            raise SimInputError(
                f"cannot submit at {submit} before the simulation time {self.now}. "
                "Fix: submit at or after the snapshot's time"
            )
        if nodes < 1 or limit_s < 1:
            raise SimInputError("an inserted job needs nodes >= 1 and a limit >= 1 s")
        run = int(limit_s if run_s is None else min(run_s, limit_s))
        tp = s.inserted_tprio if priority is None else float(priority)
        static = s.w_trace * tp + s.size_norm * nodes
        jid = self.next_jid
        self.next_jid += 1
        self.extra[jid] = (submit, int(nodes), int(limit_s), run, int(user), static, int(depends_on))
        heapq.heappush(self.inserted, (submit, jid))
        return jid

    # ------------------------------------------------------------------ event loop
    def run_until(self, t_end: int = INF, stop_jid: int = -1) -> bool:
        """Process every event up to ``t_end`` (inclusive). Returns True if ``stop_jid`` started
        (the simulation then stands at that job's start time, with that time's events done)."""
        s = self.s
        running = self.running
        inserted = self.inserted
        n_trace = s.n
        arr_time = s.arr_time
        pin_start = s.pin_start
        cap_times = s.cap_times
        pinned = self.pinned
        track = self._track
        self.stop_jid = stop_jid
        self.stop_hit = False
        if self.dirty:
            self._schedule()
            if self.stop_hit:
                return True
        while True:
            # the next event: a job end, a trace or inserted arrival, a capacity change, a pinned
            # start or a deferred backfill pass
            ne = running[0][0] if running else INF
            ns = arr_time[self.nxt] if (not pinned and self.nxt < n_trace) else INF
            ni = inserted[0][0] if inserted else INF
            nc = cap_times[self.ncap] if self.ncap < len(cap_times) else INF
            npn = pin_start[self.npin] if (pinned and self.npin < n_trace) else INF
            pins = self.pins
            if pins and pins[0][0] < npn:
                npn = pins[0][0]
            t = min(ne, ns, ni, nc, npn, self.next_bf)
            if t > t_end or t >= INF:
                break
            self.now = t
            if s.bf_aligned and t % s.bf_interval == 0 and self._grid_pass(t):
                return True
            # every event at t, in this order; each step is entered only when one of its events
            # is due, so an event costs one call
            changed = False
            if running and running[0][0] == t:
                self._end_jobs(t)
                changed = True
            if self.ncap < len(cap_times) and cap_times[self.ncap] == t:
                self._change_capacity(t)
                changed = True
            if pins and pins[0][0] == t:
                self._start_due_pins(t)
                changed = True
            if pinned:
                if self.npin < n_trace and pin_start[self.npin] == t:
                    if self._start_pinned_trace_jobs(t):
                        changed = True
            elif self.nxt < n_trace and arr_time[self.nxt] == t:
                if self._queue_trace_arrivals(t):
                    changed = True
            if inserted and inserted[0][0] == t:
                self._queue_inserted_arrivals(t)
                changed = True
            if changed:
                self.dirty = True
                self.bf_dirty = True
            if self.dirty or t == self.next_bf:
                if track:
                    if self._fol.step(self, t):
                        return True
                else:
                    self._schedule()
                    if self.stop_hit:
                        return True
        if t_end < INF:
            self.now = max(self.now, t_end)
        return False

    def _grid_pass(self, t: int) -> bool:
        """Aligned backfill: the pass of grid time ``t`` runs before the other events of that
        second (slurmctld's pass starts a fraction into the second, and an end or a submit
        recorded at second ``t`` happened later within it, as a rule), on what changed before.
        True if ``stop_jid`` started."""
        s = self.s
        if (not self.bf_dirty or not self.pending or self.cap - self.used <= 0 or s.bf_mode == "none"
                or self.last_bf + s.bf_interval > t):
            return False
        if self.next_bf <= t:
            self.next_bf = INF
        self.bf_dirty = False
        self.last_bf = t
        self._backfill_pass()
        return self.stop_hit

    def _end_jobs(self, t: int) -> None:
        """Take every job that ends at ``t`` off the cluster and out of its user's counters."""
        running = self.running
        ujobs, unodes, live = self.ujobs, self.unodes, self.live
        track = self._track
        heappop = heapq.heappop
        while running and running[0][0] == t:
            rec = heappop(running)
            _, jid, n, u, _ = rec
            if track:
                self._dr -= hash(rec)
            self.used -= n
            # a user with nothing running leaves the counters (read with .get(u, 0)), which
            # keeps them, and so every snapshot and fork, small
            c = ujobs[u] - 1
            if c:
                ujobs[u] = c
                unodes[u] -= n
            else:
                del ujobs[u]
                del unodes[u]
            live.discard(jid)

    def _change_capacity(self, t: int) -> None:
        """Apply the capacity schedule's changes at ``t``."""
        s = self.s
        cap_times = s.cap_times
        while self.ncap < len(cap_times) and cap_times[self.ncap] == t:
            self.cap = s.cap_nodes[self.ncap]
            self.ncap += 1

    def _start_due_pins(self, t: int) -> None:
        """Start the trace jobs pinned (``self.pins``: jobs the warm start found ineligible) to
        start at ``t``, their recorded start."""
        pins = self.pins
        heappop = heapq.heappop
        while pins and pins[0][0] == t:
            _, i = heappop(pins)
            self._start_trace_pinned(i, t)

    def _start_pinned_trace_jobs(self, t: int) -> bool:
        """Pinned mode: start the trace jobs recorded to start at ``t``; True if one did (an
        excluded job is passed over)."""
        s = self.s
        n_trace, pin_start, pin_order = s.n, s.pin_start, s.pin_order
        exclude = self.exclude
        changed = False
        while self.npin < n_trace and pin_start[self.npin] == t:
            i = pin_order[self.npin]
            self.npin += 1
            if i not in exclude:
                self._start_trace_pinned(i, t)
                changed = True
        return changed

    def _queue_trace_arrivals(self, t: int) -> bool:
        """Queue the trace jobs that arrive at ``t``; True if one did (an excluded job is passed
        over)."""
        s = self.s
        n_trace, arr_time, arr_order = s.n, s.arr_time, s.arr_order
        exclude = self.exclude
        track = self._track
        changed = False
        while self.nxt < n_trace and arr_time[self.nxt] == t:
            i = arr_order[self.nxt]
            self.nxt += 1
            if i not in exclude:
                rec = (s.negkey[i], t, i, s.nodes[i], s.limit[i], s.run[i], s.user[i], s.dep[i],
                       s.static[i])
                insort(self.pending, rec)
                if track:
                    self._dp += hash(rec)
                self.live.add(i)
                changed = True
        return changed

    def _queue_inserted_arrivals(self, t: int) -> None:
        """Queue the inserted jobs submitted at ``t``."""
        s = self.s
        inserted = self.inserted
        track = self._track
        heappop = heapq.heappop
        while inserted and inserted[0][0] == t:
            _, jid = heappop(inserted)
            sub, n, lim, run, u, static, dep = self.extra[jid]
            rec = (-(static - s.age_rate * sub), sub, jid, n, lim, run, u, dep, static)
            insort(self.pending, rec)
            if track and jid != self._fol.probe:
                self._dp += hash(rec)
            self.live.add(jid)

    def _start_trace_pinned(self, i: int, t: int) -> None:
        s = self.s
        n, u = s.nodes[i], s.user[i]
        self.used += n
        self.ujobs[u] = self.ujobs.get(u, 0) + 1
        self.unodes[u] = self.unodes.get(u, 0) + n
        rec = (t + s.run[i], i, n, u, t + s.limit[i])
        heapq.heappush(self.running, rec)
        if self._track:
            self._dr += hash(rec)
        self.live.add(i)
        if self.record:
            self.trace_start[i] = t

    def _start(self, r: tuple) -> None:
        now = self.now
        jid, n, u = r[R_JID], r[R_NODES], r[R_USER]
        self.used += n
        self.ujobs[u] = self.ujobs.get(u, 0) + 1
        self.unodes[u] = self.unodes.get(u, 0) + n
        rec = (now + r[R_RUN], jid, n, u, now + r[R_LIMIT])
        heapq.heappush(self.running, rec)
        if self._track:
            self._dr += hash(rec)
            self._fol.started(jid, now)
        if jid >= self.s.n:
            self.starts[jid] = now
        elif self.record:
            self.trace_start[jid] = now
        if jid == self.stop_jid:
            self.stop_hit = True

    # ------------------------------------------------------------------ scheduling
    def _ordered(self) -> list:
        """Pending records in current priority order (exact once ages reach the cap)."""
        s = self.s
        pend = self.pending
        if s.integer and pend:
            return self._ordered_integer()
        if s.age_capped and pend:
            now, m = self.now, s.max_age
            if min(map(_SUBMIT_OF, pend)) <= now - m:
                rate = s.age_rate
                # the key of the reference sort, (-(static + rate * min(age, max_age)), submit,
                # jid), unique per job, so the records themselves are never compared
                keyed = [(-(r[R_STATIC] + rate * (now - r[R_SUBMIT] if now - r[R_SUBMIT] < m else m)),
                          r[R_SUBMIT], r[R_JID], r) for r in pend]
                keyed.sort()
                return [k[3] for k in keyed]
        return pend

    def _ordered_integer(self) -> list:
        """Pending records as Slurm orders them: the priority truncated to an integer (age from
        the eligible time, capped where ``age_capped``), ties by submit time and then job id.
        With a ``calc_period``, ages are those at the last recalculation (0 after it)."""
        s = self.s
        now, m, rate, n_trace = self.now, s.max_age, s.age_rate, s.n
        if s.calc_period:
            now -= (now - s.calc_phase) % s.calc_period
        capped = s.age_capped
        sub, extra = s.submit_of, self.extra
        keyed = []
        for r in self.pending:
            age = now - r[R_SUBMIT]
            if age < 0:
                age = 0
            elif capped and age > m:
                age = m
            jid = r[R_JID]
            keyed.append((-_floor(r[R_STATIC] + rate * age),
                          sub[jid] if jid < n_trace else extra[jid][0], jid, r))
        keyed.sort(key=_first3)
        return [k[3] for k in keyed]

    def _blocked(self, r: tuple, nodes: int) -> bool:
        """Held back by a dependency or a per-user limit (not by resources)."""
        dep = r[R_DEP]
        if dep >= 0 and dep in self.live:
            return True
        s = self.s
        u = r[R_USER]
        if self.ujobs.get(u, 0) >= s.user_max_jobs.get(u, s.max_jobs):
            return True
        return self.unodes.get(u, 0) + nodes > s.max_nodes

    def _schedule(self) -> None:
        s = self.s
        now = self.now
        if self.dirty:
            self.dirty = False
            self._main_pass()
        if self.next_bf <= now:
            self.next_bf = INF
        if s.bf_mode == "none" or not self.bf_dirty or not self.pending or self.cap - self.used <= 0:
            return
        due = self.last_bf + s.bf_interval
        if s.bf_aligned:
            iv = s.bf_interval
            due = max(due, -(-now // iv) * iv)  # the next pass of the wall-clock grid
        if now >= due:
            self.bf_dirty = False
            self.last_bf = now
            self._backfill_pass()
        else:
            self.next_bf = due

    def _main_pass(self) -> None:
        free = self.cap - self.used
        if free <= 0 or not self.pending:
            return
        started = []
        # a job that would run into a capacity cut (maintenance) is left to the backfill
        # planner, which sees the cut; Slurm likewise never starts a job into a reservation
        s = self.s
        cut = INF
        for k in range(self.ncap, len(s.cap_times)):
            if s.cap_nodes[k] < self.cap:
                cut = s.cap_times[k]
                break
        live, ujobs, unodes = self.live, self.ujobs, self.unodes
        umax, mj, mn = s.user_max_jobs, s.max_jobs, s.max_nodes
        now = self.now
        order = self._ordered()
        depth = len(order)  # the records read: order[:depth] (reported to a follower)
        for k, r in enumerate(order):
            n = r[R_NODES]
            # _blocked(r, n), inline: held by a dependency or a per-user limit
            dep = r[R_DEP]
            if dep >= 0 and dep in live:
                continue
            u = r[R_USER]
            if ujobs.get(u, 0) >= umax.get(u, mj) or unodes.get(u, 0) + n > mn:
                continue
            if n > free:
                depth = k + 1
                break
            if now + r[R_LIMIT] > cut:
                self.bf_dirty = True
                continue
            self._start(r)
            started.append(r)
            free -= n
            if free <= 0:
                depth = k + 1
                break
        if self._track:
            self._fol.read(order, depth)
        if started:
            self._remove(started)

    def _remove(self, started: list) -> None:
        pend = self.pending
        for r in started:  # the very records of the queue: found by identity, order kept
            pend.remove(r)
        if self._track:
            probe = self._fol.probe
            self._dp -= sum(hash(r) for r in started if r[R_JID] != probe)

    def _backfill_pass(self) -> None:
        """One backfill pass at ``now``: reservations on a free-nodes profile over the window.

        Conservative: every tested job gets a reservation; EASY: only the first job that cannot
        start now. Job ends are the limit-based expected ends rounded up to ``bf_resolution``,
        as Slurm plans with limits, not with the (unknown) real runtimes.
        """
        s = self.s
        if s.bf_node:
            self._backfill_pass_node()
            return
        now = self.now
        res = s.bf_res
        horizon = now + s.bf_window
        conservative = s.bf_mode == "conservative"
        times, frees = free_profile(self, horizon)
        started = []
        tested = 0
        reserved_one = False
        live, ujobs, unodes = self.live, self.ujobs, self.unodes
        umax, mj, mn = s.user_max_jobs, s.max_jobs, s.max_nodes
        # without any per-user limit a job is held only by a dependency
        limits = s.user_limits
        max_test = s.bf_max_test
        whole = s.bf_whole
        exact = s.bf_exact
        lres, lplus = s.bf_lres, s.bf_lplus
        # (nodes, rounded limit) -> earliest start found for that shape in this pass, -1: none in
        # the window. The profile only loses free nodes during a pass, so a later job of the
        # same shape cannot fit earlier: its search starts there (or is skipped).
        shape_at: dict = {}
        # The pass only matters through the jobs it starts now. ``wit`` is the position of a job
        # ahead that could still start now (a witness); a job held now stays held through the
        # pass. Once no witness is left, the rest of
        # the pass could only place reservations, which nothing keeps: it stops there.
        # neg[nodes]: the smallest limit known unable to start now (a job at least as large and
        # as long cannot either). A list: only a job that fits in the nodes free now can be a
        # witness, and frees[0] only falls during the pass.
        neg = [INF] * (frees[0] + 1)
        order = self._ordered()
        nord = len(order)
        i = 0
        scan = 0  # the witness search resumes here (every job before it is no witness)
        wit = -1
        # now + the witness's rounded limit: a reservation from then on takes no node the
        # witness needs, so it can still start now without checking
        wend = now
        while i < nord:
            if wit < i:
                wit = self._find_witness(order, scan if scan > i else i, times, frees, neg)
                if wit < 0:
                    break
                scan = wit
                wend = now + -(-order[wit][R_LIMIT] // lres) * lres + lplus
            r = order[i]
            i += 1
            if tested >= max_test:
                break
            n = r[R_NODES]
            # _blocked(r, n), inline
            dep = r[R_DEP]
            if dep >= 0 and dep in live:
                continue
            if limits:
                u = r[R_USER]
                if ujobs.get(u, 0) >= umax.get(u, mj) or unodes.get(u, 0) + n > mn:
                    continue
            tested += 1
            lim = -(-r[R_LIMIT] // lres) * lres + lplus
            # earliest_fit(times, frees, n, lim, k), inline, searching from where this pass last
            # placed the same shape
            shape = (n, lim)
            prev = shape_at.get(shape)
            if prev is None:
                k = 0
            elif prev < 0:
                continue  # cannot start within the window: Slurm sets no reservation
            else:
                k = bisect_left(times, prev)
            nt = len(times)
            while k < nt:
                if frees[k] < n:
                    k += 1
                    continue
                tend = times[k] + lim
                j = k + 1
                while j < nt and times[j] < tend:
                    if frees[j] < n:
                        break
                    j += 1
                else:
                    break  # n nodes free from step k for lim seconds
                k = j + 1
            else:
                shape_at[shape] = -1
                continue
            t0 = times[k]
            shape_at[shape] = t0
            if t0 == now:
                self._start(r)
                started.append(r)
            elif not conservative and reserved_one:
                continue
            else:
                reserved_one = True
            # reserve(times, frees, k, n, t0 + lim, horizon), inline
            rs = t0
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
                    and not self._witness_still_fits(order[wit], times, frees, neg)):
                wit = -1
        if self._track:
            # read: order[:i] and the witnesses found (each the last of a search's reads, and
            # ``scan`` the last found); a search that found none read the rest of the queue only
            # for whether some job there could start now, which does not depend on their order
            self._fol.read(order, max(i, scan + 1))
        if started:
            self._remove(started)

    def _backfill_pass_node(self) -> None:
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
        s = self.s
        now = self.now
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
        order = self._ordered()
        for r in order:
            if tested >= s.bf_max_test:
                break
            n = r[R_NODES]
            if self._blocked(r, n):
                continue
            tested += 1
            lim = r[R_LIMIT]
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
                    break  # never within the window: no reservation
                st = self._will_run(n)
                if st < start_res:
                    st = start_res
                if st <= now:
                    self._start(r)
                    started.append(r)
                    break
                if later and st > later:
                    start_res = later
                    continue
                if st > now + s.bf_window:
                    break
                rs = st - st % res
                re_ = st + lim
                re_ -= re_ % res
                if any(bt[k + 1] > rs and bt[k] < re_ and not free[k] for k in range(len(free))):
                    start_res = st  # overlaps a reservation made before: try from there
                    continue
                _reserve_node(bt, free, max(rs, b0), max(re_, rs + res))
                break
        if self._track:
            self._fol.read(order, len(order))
        if started:
            self._remove(started)

    def _will_run(self, n: int) -> int:
        """select/cons_common's will-run test for ``n`` CPUs on the one node: now if they are free,
        else the running jobs (limit-based ends) are taken off in batches: the first end aligned up
        to a 30 s barrier, every job ending within the window after it removed with it, the window
        doubling after each batch; the start is the last end of the batch that makes room (INF if
        none does)."""
        now = self.now
        fr = self.cap - self.used
        if fr >= n:
            return now
        ends = sorted((exp, m) for _, _, m, _, exp in self.running)
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

    def _find_witness(self, order: list, q: int, times: list, frees: list, neg: list) -> int:
        """The position, from ``q`` on, of the first job in ``order`` that could start now (not
        held, and its nodes free now for its rounded limit), or -1. Each job found unable to
        start now is noted in ``neg``."""
        s = self.s
        now, lres, lplus = self.now, s.bf_lres, s.bf_lplus
        live, ujobs, unodes = self.live, self.ujobs, self.unodes
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
                        # _fits_now(times, frees, now, n, rounded L), inline (frees[0] >= n)
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

    def _witness_still_fits(self, rw: tuple, times: list, frees: list, neg: list) -> bool:
        """Whether the witness ``rw`` can still start now after a reservation took nodes from the
        profile; if not, it is noted in ``neg``."""
        lres, lplus = self.s.bf_lres, self.s.bf_lplus
        wn, wl = rw[R_NODES], rw[R_LIMIT]
        if _fits_now(times, frees, self.now, wn, -(-wl // lres) * lres + lplus):
            return True
        if wl < neg[wn]:
            neg[wn] = wl
        return False


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


def _floor(x: float) -> int:
    """Slurm stores a priority as a 32-bit unsigned integer: a negative sum counts as 0 (sprio
    shows at least 1 for a pending job; only the order matters here)."""
    return int(x) if x > 0 else 0


def _first3(k: tuple):
    return k[0], k[1], k[2]


def _fits_now(times: list, frees: list, now: int, n: int, lim: int) -> bool:
    """Whether ``n`` nodes of the free-nodes profile stay free from ``now`` (its first step) for
    ``lim`` seconds."""
    if frees[0] < n:
        return False
    tend = now + lim
    j, nt = 1, len(times)
    while j < nt and times[j] < tend:
        if frees[j] < n:
            return False
        j += 1
    return True
