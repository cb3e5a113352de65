"""The event-driven Slurm model: event loop, main scheduler; the backfill pass is the
description's strategy (``mirage.sim.backfill``), run by the event loop.

Time jumps from event to event (a job ends, a capacity change, a submit, a pinned start, a
deferred backfill pass); the schedulers run only after something changed, because nothing else
can let a job start. Allocation is whole nodes. Trace jobs run for their recorded runtime capped
at their limit; inserted service jobs run to their limit unless told otherwise.

Pure Python on purpose: the profile of a full ls6 replay is dominated by dict/heap work per event,
which numpy cannot batch; see docs/sim.md for the measurements.
"""

from __future__ import annotations

import heapq
from bisect import insort
from operator import attrgetter, itemgetter
from typing import NamedTuple

import numpy as np

from .backfill import strategy_for
from mirage.units import INF
from .jobs import NO_DEP, JobTable, SimInputError
from .cluster import ClusterDescription
from .records import R_DEP, R_JID, R_LIMIT, R_NODES, R_RUN, R_STATIC, R_SUBMIT, R_USER
from .state import SimState, Snapshot

#: an inserted job without a user belongs to this pseudo user (the service being provisioned)
SERVICE_USER = -2

_SUBMIT_OF = itemgetter(R_SUBMIT)
#: the SimState fields a simulator holds as they are (numbers, flags, the frozen exclude set),
#: in the order ``Simulator._restore`` assigns them; the other fields are containers, copied
#: between the state's tuples and the simulator's lists/dicts
_SCALARS_OF = attrgetter("now", "nxt", "npin", "ncap", "cap", "used", "next_jid", "bf_dirty",
                         "last_bf", "next_bf", "dirty", "exclude")


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
        #: the backfill algorithm (mirage.sim.backfill); its passes are run by the event loop
        self.backfill = strategy_for(bf)
        self.bf_interval = int(bf.interval_s)
        self.bf_window = int(bf.window_min) * 60
        self.bf_res = max(1, int(bf.resolution_s))
        self.bf_max_test = int(bf.max_job_test)
        self.bf_whole = bool(bf.whole_node)
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
        # one assignment: a loop of setattr would cost every fork and what-if a few microseconds
        (self.now, self.nxt, self.npin, self.ncap, self.cap, self.used, self.next_jid,
         self.bf_dirty, self.last_bf, self.next_bf, self.dirty, self.exclude) = _SCALARS_OF(st)
        self.pending = list(st.pending)
        self.running = list(st.running)
        self.ujobs = dict(st.ujobs)
        self.unodes = dict(st.unodes)
        self.live = set(st.live)
        self.inserted = list(st.inserted)
        self.extra = dict(st.extra)
        self.starts = dict(st.starts)
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
        if (not self.bf_dirty or not self.pending or self.cap - self.used <= 0
                or not s.backfill.passes or self.last_bf + s.bf_interval > t):
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
        if not s.backfill.passes or not self.bf_dirty or not self.pending or self.cap - self.used <= 0:
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
        """One backfill pass at ``now``, as the description's strategy (``mirage.sim.backfill``)
        does it."""
        self.s.backfill.run(self)


def _floor(x: float) -> int:
    """Slurm stores a priority as a 32-bit unsigned integer: a negative sum counts as 0 (sprio
    shows at least 1 for a pending job; only the order matters here)."""
    return int(x) if x > 0 else 0


def _first3(k: tuple):
    return k[0], k[1], k[2]
