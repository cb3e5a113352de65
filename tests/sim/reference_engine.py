"""The simulator's scheduling passes as they were before the speed work: the pure reference.

``ReferenceSimulator`` is the engine's ``Simulator`` with the main and backfill passes, the
priority ordering and the queue removal replaced by the straightforward versions (a full sort
with the priority key whenever an age is capped, every queued job tested in every backfill pass
from the start of the profile, no early stop but the one on no free node now). Tests compare the
fast engine and the what-if reuse against it; it is not used anywhere else.
"""

from __future__ import annotations

from bisect import bisect_left

from mirage.sim.engine import (INF, R_DEP, R_JID, R_LIMIT, R_NODES, R_STATIC, R_SUBMIT, R_USER,
                               Simulator)
from mirage.sim.jobs import to_seconds
from mirage.sim.warmstart import warm_start
from mirage.sim.whatif import DEFAULT_MAX_WAIT_S, _user_code


class ReferenceSimulator(Simulator):
    def _ordered(self) -> list:
        """Pending records in current priority order (exact once ages reach the cap)."""
        s = self.s
        pend = self.pending
        if s.age_capped and pend:
            cutoff = self.now - s.max_age
            if any(r[R_SUBMIT] <= cutoff for r in pend):
                now, rate, m = self.now, s.age_rate, s.max_age
                return sorted(pend, key=lambda r: (-(r[R_STATIC] + rate * min(now - r[R_SUBMIT], m)),
                                                   r[R_SUBMIT], r[R_JID]))
        return pend

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
        for r in self._ordered():
            n = r[R_NODES]
            if self._blocked(r, n):
                continue
            if n > free:
                break
            if self.now + r[R_LIMIT] > cut:
                self.bf_dirty = True
                continue
            self._start(r)
            started.append(r)
            free -= n
            if free <= 0:
                break
        if started:
            self._remove(started)

    def _remove(self, started: list) -> None:
        gone = set(started)
        self.pending = [r for r in self.pending if r not in gone]

    def _backfill_pass(self) -> None:
        """One backfill pass at ``now``: reservations on a free-nodes profile over the window.

        Conservative: every tested job gets a reservation; EASY: only the first job that cannot
        start now. Job ends are the limit-based expected ends rounded up to ``bf_resolution``,
        as Slurm plans with limits, not with the (unknown) real runtimes.
        """
        s = self.s
        now = self.now
        res = s.bf_res
        horizon = now + s.bf_window
        conservative = s.bf_mode == "conservative"
        # free-nodes step function: times[k] .. times[k+1] has frees[k] nodes free
        deltas: dict = {}
        for _, _, n, _, exp in self.running:
            if exp < horizon:
                te = now + -(-(exp - now) // res) * res if exp > now else now
                deltas[te] = deltas.get(te, 0) + n
        for k in range(self.ncap, len(s.cap_times)):
            tc = s.cap_times[k]
            if tc >= horizon:
                break
            prev = self.cap if k == self.ncap else s.cap_nodes[k - 1]
            deltas[tc] = deltas.get(tc, 0) + s.cap_nodes[k] - prev
        times = [now]
        frees = [self.cap - self.used]
        for te in sorted(deltas):
            if te <= now:
                frees[0] += deltas[te]
            else:
                times.append(te)
                frees.append(frees[-1] + deltas[te])
        started = []
        tested = 0
        reserved_one = False
        for r in self._ordered():
            if tested >= s.bf_max_test:
                break
            n = r[R_NODES]
            if self._blocked(r, n):
                continue
            tested += 1
            lim = -(-r[R_LIMIT] // res) * res
            nt = len(times)
            # earliest k where the job fits from times[k] for its whole limit
            k = 0
            found = -1
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
                    found = k
                    break
                k = j + 1
            if found < 0:
                continue  # cannot start within the window: Slurm sets no reservation
            t0 = times[found]
            if t0 == now:
                self._start(r)
                started.append(r)
            elif not conservative and reserved_one:
                continue
            else:
                reserved_one = True
            # subtract the job (or its reservation) from the profile
            t1 = t0 + lim
            a = found
            if t1 < horizon:
                b = bisect_left(times, t1)
                if b == len(times) or times[b] != t1:
                    times.insert(b, t1)
                    frees.insert(b, frees[b - 1])
            else:
                b = len(times)
            for q in range(a, b):
                frees[q] -= n
            if frees[0] <= 0:
                # nothing else can start now; later reservations would only shape this pass
                break
        if started:
            self._remove(started)


def reference_fork(base) -> ReferenceSimulator:
    """A reference simulator continuing from a Simulator or a Snapshot (not changing it)."""
    from mirage.sim.state import Snapshot

    if isinstance(base, Snapshot):
        return ReferenceSimulator(base.static, base.state, pinned=base.pinned)
    return ReferenceSimulator(base.s, base.state(), pinned=base.pinned)


def reference_what_if(base, submit, nodes: int, limit_min: int, user=None, *,
                      max_wait_s: int = DEFAULT_MAX_WAIT_S):
    sim = reference_fork(base)
    submit = to_seconds(submit)
    jid = sim.insert_job(submit, int(nodes), int(limit_min) * 60, user=_user_code(sim.s, user))
    if sim.run_until(submit + max_wait_s, stop_jid=jid):
        return sim.starts[jid]
    return None


def reference_replay(table, profile, t0, t_end):
    """Simulated start of every trace job from ``t0`` to ``t_end`` with the reference passes."""
    fast = warm_start(table, profile, t0, record=True)
    sim = ReferenceSimulator(fast.s, fast.state(), pinned=fast.pinned, record=True)
    sim.trace_start[:] = fast.trace_start
    sim.run_until(to_seconds(t_end))
    return sim.trace_start
