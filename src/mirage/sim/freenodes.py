"""The free-nodes profile Slurm's planner works on, and the operations on it.

A profile is two parallel lists: ``frees[k]`` nodes are free from ``times[k]`` until
``times[k+1]`` (the last step lasts forever). The backfill strategies (``backfill``) and the
``--test-only`` estimate (``plan``) both build it from the running jobs' limit-based ends and
the capacity schedule, search it for the earliest fit of a job and take a job's nodes out of it.
"""

from __future__ import annotations

from bisect import bisect_left

from mirage.units import INF



def free_profile(sim, horizon: int = INF) -> tuple[list[int], list[int]]:
    """Free nodes over time if running jobs end at their limits (rounded up to the backfill
    resolution) and capacity follows the schedule: ``frees[k]`` nodes from ``times[k]`` until
    ``times[k+1]``; ``times[0]`` is now."""
    s = sim.s
    now, res = sim.now, s.bf_pres
    deltas: dict = {}
    get = deltas.get
    for _, _, n, _, exp in sim.running:
        if exp < horizon:
            # exp rounded up to now + a multiple of res: exp + (now - exp) % res (exact integers)
            te = exp + (now - exp) % res if exp > now else now
            deltas[te] = get(te, 0) + n
    for k in range(sim.ncap, len(s.cap_times)):
        tc = s.cap_times[k]
        if tc >= horizon:
            break
        prev = sim.cap if k == sim.ncap else s.cap_nodes[k - 1]
        deltas[tc] = deltas.get(tc, 0) + s.cap_nodes[k] - prev
    times, frees = [now], [sim.cap - sim.used]
    for te in sorted(deltas):
        if te <= now:
            frees[0] += deltas[te]
        else:
            times.append(te)
            frees.append(frees[-1] + deltas[te])
    return times, frees


def earliest_fit(times: list[int], frees: list[int], n: int, lim: int, k: int = 0) -> int:
    """Index of the first profile step from which ``n`` nodes stay free for ``lim`` seconds
    (searching from step ``k``), or -1 if there is none."""
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
            return k
        k = j + 1
    return -1


def fits_now(times: list[int], frees: list[int], now: int, n: int, lim: int) -> bool:
    """Whether ``n`` nodes of the profile stay free from ``now`` (its first step) for ``lim``
    seconds."""
    if frees[0] < n:
        return False
    tend = now + lim
    j, nt = 1, len(times)
    while j < nt and times[j] < tend:
        if frees[j] < n:
            return False
        j += 1
    return True


def reserve(times: list[int], frees: list[int], k: int, n: int, t1: int,
            horizon: int = INF) -> None:
    """Take ``n`` nodes from step ``k`` until ``t1`` (in place)."""
    if t1 < horizon:
        b = bisect_left(times, t1)
        if b == len(times) or times[b] != t1:
            times.insert(b, t1)
            frees.insert(b, frees[b - 1])
    else:
        b = len(times)
    for x in range(k, b):  # a few steps as a rule: faster than a slice assignment
        frees[x] -= n
