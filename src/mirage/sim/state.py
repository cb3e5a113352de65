"""Snapshots of a simulation: everything that changes while it runs, copied shallowly.

Records inside the containers are immutable tuples, so a snapshot costs one list/dict copy per
container (the queue and the running set hold tens to a few hundred entries), not a deep copy;
the trace arrays are shared, never copied. A snapshot can be restored any number of times.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SimState:
    now: int
    nxt: int  # next trace job (submit order) not yet submitted
    npin: int  # next pinned trace job (recorded-start order) not yet started
    ncap: int  # next capacity change
    cap: int
    used: int
    pending: tuple  # records sorted by priority, see engine.Simulator
    running: tuple  # heap of (end, jid, nodes, user, expected_end)
    ujobs: tuple  # (user, running jobs) pairs
    unodes: tuple
    live: frozenset  # jids pending or running, for dependencies
    inserted: tuple  # heap of (submit, jid) not yet submitted
    extra: tuple  # (jid, (submit, nodes, limit, run, user, static_priority, dep)) of inserted jobs
    starts: tuple  # (jid, start) of inserted jobs that started
    next_jid: int
    bf_dirty: bool
    last_bf: int
    next_bf: int
    dirty: bool
    exclude: frozenset
    pins: tuple = ()  # heap of (recorded start, jid): trace jobs that start as recorded


@dataclass(frozen=True, eq=False)
class Snapshot:
    """A restorable point of a simulation: the shared static data plus a :class:`SimState`.
    Plain data: ``engine.Simulator.restore(snapshot)`` continues from it."""

    static: object  # engine._Static, shared read-only
    state: SimState
    pinned: bool

    @property
    def now(self) -> int:
        return self.state.now
