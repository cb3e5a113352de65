"""The demand of a synthetic cluster: seeded job submissions calibrated from facts about the
real traces.

The generator draws *demand* (submit times, users, node counts, limits, runtimes, dependency
chains, recorded priorities) from measured marginals. It assigns no start times: the simulator
does (``mirage.sim.synth`` runs the demand through ``mirage.sim``'s Slurm model with FIFO
priority, EASY backfill and the per-user running-job limit), so queue waits come out of the
load, the way they do on the real machine, instead of being sampled: a day with heavy demand
produces long waits for big and long jobs, a quiet day does not. Load varies over time (regime
switching of a demand multiplier plus day-to-day noise, and batch submissions by single
users), so low, medium and heavy queueing all occur.

Everything random flows from one ``numpy.random.Generator`` seeded by ``seed``; the same
arguments always give the same demand.

Calibration numbers live in ``CALIBRATION`` below, each with where it came from. ``params``
passed to :func:`draw_demand` are deep-merged over the cluster's defaults, so a workflow can
override any of them (e.g. from a YAML file) without copying the rest.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mirage.traces.schema import conform
from mirage.units import DAY_S, HOUR_S


# ---------------------------------------------------------------------------------------------
# Calibration. ls6 numbers were measured on the published ls6-a100.log (Mirage artifact,
# CC BY 4.0), main period = jobs submitted 2022-11-01 .. 2023-03-31 (151 days, 24,715 jobs),
# unless a line says otherwise.
# ---------------------------------------------------------------------------------------------

#: the generator's scheduler unless a calibration says otherwise: a plain Slurm (see "scheduler")
DEFAULT_SCHEDULER: dict[str, Any] = {
    "backfill_mode": "easy", "bf_interval_s": 0, "bf_resolution_s": 1, "weight_age": 1.0,
    "max_age_days": 0, "weight_size": 0.0, "weight_trace": 0.0, "integer": False}

_LS6: dict[str, Any] = {
    # TACC docs: 84 A100 nodes; the trace never has more than 80 busy, and at most 32 until
    # 2022-11-08 (partition grew then). Capacity = usable nodes, not hardware.
    "nodes_total": 84,
    "initial_capacity": 32,
    "capacity_changes": [["2022-11-08T00:00:00", 80]],
    # Demand at full capacity. 24,715 jobs in 151 days, of which 7 at 32/80 of the demand
    # (see _batch_times): 24,715 / (144 + 7 * 0.4) = 168.4. The overall rate is 163.7/day.
    "jobs_per_day": 168.4,
    # Share of submits per hour of day (local time), %, main period.
    "hour_shares": [2.95, 2.00, 1.67, 1.43, 0.99, 1.27, 1.32, 1.99, 3.88, 5.15, 6.11, 7.48,
                    6.57, 7.00, 6.92, 6.67, 6.78, 4.64, 4.30, 4.28, 3.39, 4.64, 4.32, 4.25],
    # Share of submits per weekday Mon..Sun, %, main period.
    "weekday_shares": [16.97, 18.33, 16.62, 14.14, 13.64, 8.93, 11.38],
    # Batches: consecutive submits of one user less than 60 s apart. Share of batches by
    # size range [lo, hi, share]; 86 % are single jobs, the largest has 40. Within a batch
    # 85 % share the limit and 95 % the node count, so a batch shares both here.
    "batch_sizes": [[1, 1, 0.861], [2, 2, 0.0833], [3, 3, 0.0195], [4, 4, 0.0153],
                    [5, 8, 0.0108], [9, 16, 0.0060], [17, 32, 0.0027], [33, 40, 0.0015]],
    # Node-count shares; rare counts merged into the nearest listed one (5-6 -> 6,
    # 9-12 -> 12, 14-16 -> 16). Node count is nearly independent of the limit in the trace.
    "node_mix": {1: 0.7961, 2: 0.0719, 3: 0.0334, 4: 0.0724, 6: 0.0032, 8: 0.0071,
                 12: 0.0038, 16: 0.0113, 32: 0.0005, 64: 0.0002},
    # Limit shares (minutes), every limit with >= 0.2 % of jobs (95.8 % of all jobs; the
    # rest is spread proportionally). 2880 min (48 h) is the mode at 23.7 %.
    "limit_mix": {2880: 0.2373, 30: 0.0995, 60: 0.0839, 120: 0.0836, 1440: 0.0660,
                  90: 0.0540, 180: 0.0303, 720: 0.0300, 240: 0.0300, 10: 0.0300,
                  600: 0.0249, 480: 0.0203, 300: 0.0198, 360: 0.0172, 1200: 0.0161,
                  5: 0.0131, 15: 0.0120, 2160: 0.0105, 150: 0.0102, 3: 0.0079, 20: 0.0072,
                  450: 0.0066, 210: 0.0054, 1: 0.0049, 1800: 0.0046, 140: 0.0044,
                  260: 0.0043, 1320: 0.0036, 2820: 0.0036, 960: 0.0034, 840: 0.0025,
                  2100: 0.0024, 2085: 0.0023, 2: 0.0023, 420: 0.0021, 330: 0.0020},
    # Runtime / limit histogram: bin edges and shares. 26 % of jobs end within 0.1 % of
    # their limit (crashes, seconds), 16 % run to the limit; median ratio 0.05. The ratio
    # barely depends on the limit in the trace, so it is drawn independently.
    "ratio_edges": [0.0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.98, 1.0],
    "ratio_shares": [0.2615, 0.1371, 0.1012, 0.0578, 0.0655, 0.0519, 0.0598, 0.0485,
                     0.0397, 0.0177, 0.1595],
    # Users: 366 distinct in the main period, 124-213 per month; jobs per user are heavy
    # tailed (median 19, p90 164, p99 701 -> lognormal sigma ~1.6). Users join as a Poisson
    # stream and stay active for an exponential lifetime; rate and lifetime were tuned so that
    # distinct users per 151 days and per month match.
    # The weight is capped at 2 sigma: the busiest real user has 4.6 % of all jobs, and an
    # uncapped draw occasionally makes one user submit a third of the trace.
    "users": {"joins_per_day": 1.9, "mean_life_days": 70.0, "weight_sigma": 1.6,
              "weight_cap_sigmas": 2.0},
    # Share of multi-job batches that are dependency chains (each job starts after the
    # previous one ends): 32 % of the trace's multi-job batches ran strictly one after
    # another. Chains, not a shortage of nodes, explain most long waits on ls6: 66 % of the
    # jobs that waited > 12 h belong to a multi-job batch, and at their start the median
    # busy count was 70 of 80 nodes.
    "chain_share": 0.32,
    # Slurm QOS: no user ever has more than 8 jobs running at once (26 users reach 8).
    "user_running_limit": 8,
    # Demand multiplier: regimes of several days (quiet / normal / busy) times lognormal
    # day-to-day noise. Not measured directly: tuned so that daily mean busy nodes
    # (real p10/p50/p90: 34/66/74 of 80) and the daily mean wait of jobs with limit >= 24 h
    # (real: 34 % of days <= 2 h, 29 % > 12 h, median 4.9 h) come out similar.
    # Regimes much longer than 3 days, or a busy level above ~1.3, let the backlog run away
    # for weeks (waits of days for every job), which the real trace never shows.
    "load": {"levels": [0.65, 0.95, 1.25], "probs": [0.3, 0.45, 0.25],
             "mean_dwell_days": 3.0, "noise_sigma": 0.15},
    # Priority as Slurm records it: 1000 + a heavy-tailed part (real p10/p50/p90 of the part
    # above 1000: 39/182/519).
    "priority": {"base": 1000, "median_extra": 182.0, "sigma": 0.9},
    # Jobs submitted this many days before ``start`` are simulated too, so the cluster is
    # not empty at the start of the trace; only those still queued or running at ``start``
    # are kept (as the real trace keeps October jobs that ran in November).
    "warmup_days": 4.0,
    # Jobs the backfill pass examines per scheduling cycle (Slurm's bf_max_job_test idea).
    "backfill_depth": 200,
    # How the generator's scheduler (mirage.sim.synth) orders and backfills the demand. The
    # default is a plain Slurm: first in, first out (age only, never capped) and EASY backfill
    # after every event at 1-s resolution. Other settings make test traces whose scheduler the
    # fit of `mirage sim calibrate` has to find: multifactor priority (an age weight reaching its
    # full value after max_age_days, a size weight, the recorded priority column times
    # weight_trace, Slurm's integer priority), conservative backfill on an interval and a
    # resolution. max_age_days 0: the FIFO order (the age in seconds, uncapped).
    "scheduler": dict(DEFAULT_SCHEDULER),
    "first_job_id": 1_000_001,
}


def _scaled_from_ls6(nodes_total: int, capacity: int) -> dict[str, Any]:
    """A cluster for which only the node count is known: ls6 shapes, demand scaled by size.

    Arrival shapes, mixes, runtimes and user behaviour are ls6's; jobs per day are scaled by
    capacity / 80 so that the load (demand / capacity) matches ls6. No capacity change.
    """
    p = copy.deepcopy(_LS6)
    p.update(
        nodes_total=nodes_total,
        initial_capacity=capacity,
        capacity_changes=[],
        jobs_per_day=round(163.7 * capacity / 80, 1),
    )
    return p


CALIBRATION: dict[str, dict[str, Any]] = {
    "ls6": _LS6,
    # Frontera RTX: 90 GPU nodes (TACC docs); scaled from ls6, see _scaled_from_ls6.
    "frontera": _scaled_from_ls6(90, 90),
    # Longhorn V100: 88 nodes (reference default); scaled from ls6.
    "longhorn": _scaled_from_ls6(88, 88),
}


def cluster_params(cluster: str, params: dict | None = None) -> dict[str, Any]:
    """The cluster's calibration with ``params`` deep-merged over it."""
    if cluster not in CALIBRATION:
        raise ValueError(f"no synthetic calibration for cluster {cluster!r}; "
                         f"known: {sorted(CALIBRATION)}")
    return _merge(copy.deepcopy(CALIBRATION[cluster]), params or {})


def _merge(base: dict, over: dict, where: str = "") -> dict:
    """Sections (string keys) merge key by key; a mix (numeric keys) is replaced whole. A key
    the calibration does not have is refused: a misspelt override would otherwise be ignored."""
    for key, value in over.items():
        if key not in base:
            raise ValueError(f"unknown synthetic calibration parameter {where + str(key)!r}; "
                             f"known here: {sorted(map(str, base))}. Fix: correct the key in "
                             "clusters.<cluster>.synthetic.params (or the --params file)")
        if (isinstance(value, dict) and isinstance(base.get(key), dict)
                and all(isinstance(k, str) for k in base[key])):
            _merge(base[key], value, f"{where}{key}.")
        else:
            base[key] = copy.deepcopy(value)
    return base


# ---------------------------------------------------------------------------------------------
# Public entry point: the demand, and the table once a scheduler has given every job its start
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Demand:
    """The jobs a synthetic cluster's users submit, before any scheduler has started them.

    Times are integer seconds since ``origin`` (the start of the warm-up); ``jobs`` holds
    parallel arrays sorted by submit time: ``submit``, ``user`` (an index), ``nodes``,
    ``limit_min``, ``runtime`` (s, never above the limit), ``batch``, ``after`` (the index of
    the job this one waits for, -1 for none) and ``priority`` (as Slurm records it).
    """

    cluster: str
    origin: pd.Timestamp
    warm: int  # seconds of warm-up before the trace's start
    jobs: dict
    #: (seconds since origin, usable nodes) of every capacity change; the first is at 0
    capacity: tuple
    #: Slurm QOS: running jobs per user at most
    user_running_limit: int
    #: jobs a backfill pass examines (Slurm's bf_max_job_test)
    backfill_depth: int
    first_job_id: int
    #: the calibration's ``scheduler`` section: how mirage.sim.synth schedules the demand
    scheduler: dict = field(default_factory=lambda: dict(DEFAULT_SCHEDULER))

    def __len__(self) -> int:
        return len(self.jobs["submit"])

    def to_table(self, start: np.ndarray) -> pd.DataFrame:
        """The canonical job table once every job has its ``start`` (s since origin): the jobs
        submitted from the trace's start on, and the warm-up's jobs still queued or running
        then."""
        start = np.asarray(start, dtype=np.int64)
        if len(start) != len(self) or (start < self.jobs["submit"]).any():
            raise ValueError("a synthetic schedule must give every job a start at or after its "
                             "submit. Fix: schedule the whole demand to completion")
        jobs = {**self.jobs, "start": start, "end": start + self.jobs["runtime"]}
        return _to_table(self.cluster, _drop_warmup_finished(jobs, self.warm), self.origin,
                         self.first_job_id)


def draw_demand(cluster: str, start: str | pd.Timestamp, days: float, seed: int,
                params: dict | None = None) -> Demand:
    """The seeded demand of ``cluster`` with submits in ``[start - warm-up, start + days)``.

    The warm-up (``warmup_days``) fills the cluster before ``start``; a scheduler (the
    simulator's, see ``mirage.sim.synth``) turns the demand into a trace.
    """
    p = cluster_params(cluster, params)
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp(start).floor("s")
    warm = int(round(float(p["warmup_days"]) * DAY_S))
    horizon = int(round(float(days) * DAY_S))
    origin = t0 - pd.Timedelta(seconds=warm)  # time zero of the schedule's clock

    cap_t, cap_v = _capacity_schedule(p, origin)
    jobs = _demand(rng, p, origin, warm + horizon, cap_t, cap_v)
    jobs["nodes"] = _fit_to_capacity(jobs["nodes"], jobs["submit"], cap_t, cap_v)
    prio = p["priority"]
    extra = rng.lognormal(np.log(float(prio["median_extra"])), float(prio["sigma"]),
                          size=len(jobs["submit"]))
    jobs["priority"] = int(prio["base"]) + np.round(extra).astype(np.int64)
    return Demand(cluster=cluster, origin=origin, warm=warm, jobs=jobs,
                  capacity=tuple(zip(cap_t, cap_v)),
                  user_running_limit=int(p["user_running_limit"]),
                  backfill_depth=int(p["backfill_depth"]),
                  first_job_id=int(p["first_job_id"]),
                  scheduler=dict(p["scheduler"]))


def _drop_warmup_finished(jobs: dict[str, np.ndarray], warm: int) -> dict[str, np.ndarray]:
    """The jobs submitted from ``warm`` on or still running then, dependencies renumbered."""
    keep = (jobs["submit"] >= warm) | (jobs["end"] > warm)
    new_index = np.cumsum(keep) - 1
    pred = jobs["after"]
    # A predecessor that ended during the warm-up is not in the table: the dependency is moot.
    after = np.where((pred >= 0) & keep[np.maximum(pred, 0)], new_index[np.maximum(pred, 0)], -1)
    out = {k: v[keep] for k, v in jobs.items() if k != "after"}
    out["after"] = after[keep]
    return out


# ---------------------------------------------------------------------------------------------
# Demand
# ---------------------------------------------------------------------------------------------


def _demand(rng: np.random.Generator, p: dict, origin: pd.Timestamp, span: int,
            cap_t: list[int], cap_v: list[int]) -> dict[str, np.ndarray]:
    """Jobs as arrays (times in seconds since ``origin``), sorted by submit time."""
    n_days = int(np.ceil(span / DAY_S)) + 1
    load = _load_curve(rng, p["load"], n_days)
    batch_t = _batch_times(rng, p, origin, span, load, cap_t, cap_v)
    n_batch = len(batch_t)

    sizes = _draw_batch_sizes(rng, p["batch_sizes"], n_batch)
    users = _draw_users(rng, p["users"], batch_t, span)
    nodes = _draw_categorical(rng, p["node_mix"], n_batch)
    limits = _draw_categorical(rng, p["limit_mix"], n_batch)

    idx, offset, submit = _batch_jobs(rng, batch_t, sizes)
    limit_min = limits[idx]
    runtime = _draw_runtimes(rng, p, limit_min)
    chained = (rng.random(n_batch) < float(p["chain_share"]))[idx] & (offset > 0)
    after = np.where(chained, np.arange(len(idx)) - 1, -1)

    order, after = _submit_order(submit, after)
    return {
        "submit": submit[order],
        "user": users[idx][order],
        "nodes": nodes[idx][order],
        "limit_min": limit_min[order],
        "runtime": runtime[order],
        "batch": idx[order],
        "after": after,  # index (in this order) of the job this one waits for, or -1
    }


def _batch_jobs(rng: np.random.Generator, batch_t: np.ndarray,
                sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The jobs of the batches: per job its batch, its place in the batch and its submit time."""
    # A batch's jobs share user, nodes and limit and arrive a few seconds apart.
    idx = np.repeat(np.arange(len(sizes)), sizes)
    first = np.repeat(np.cumsum(sizes) - sizes, sizes)
    offset = np.arange(len(idx)) - first
    gaps = np.where(offset > 0, rng.integers(1, 4, size=len(idx)), 0)
    within = np.cumsum(gaps)
    submit = batch_t[idx] + within - within[first]
    return idx, offset, submit


def _submit_order(submit: np.ndarray, after: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order that sorts the jobs by submit time, and ``after`` (a job's predecessor, -1 for
    none) in that order with the predecessors renumbered to it."""
    order = np.argsort(submit, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    after = np.where(after[order] >= 0, rank[np.maximum(after[order], 0)], -1)
    return order, after


def _load_curve(rng: np.random.Generator, load: dict, n_days: int) -> np.ndarray:
    """Daily demand multiplier, mean ~1: a Markov regime (quiet/normal/busy) times noise.

    Regimes last ``mean_dwell_days`` on average, which is what makes queues build up over
    several days (heavy load) or drain completely (low load); the noise gives day-to-day
    variation inside a regime.
    """
    levels = np.asarray(load["levels"], float)
    probs = np.asarray(load["probs"], float)
    probs = probs / probs.sum()
    levels = levels / float(levels @ probs)  # stationary mean 1
    switch = rng.random(n_days) < 1.0 / float(load["mean_dwell_days"])
    draws = rng.choice(len(levels), size=n_days, p=probs)
    state = np.empty(n_days, dtype=int)
    current = draws[0]
    for d in range(n_days):
        if switch[d]:
            current = draws[d]
        state[d] = current
    sigma = float(load["noise_sigma"])
    noise = np.exp(rng.normal(-sigma**2 / 2, sigma, size=n_days))
    return levels[state] * noise


def _batch_times(rng: np.random.Generator, p: dict, origin: pd.Timestamp, span: int,
                 load: np.ndarray, cap_t: list[int], cap_v: list[int]) -> np.ndarray:
    """Batch submit times: Poisson counts per hour, shaped by hour of day, weekday and load.

    ``jobs_per_day`` is the demand at the largest capacity; while the partition is smaller,
    demand shrinks in proportion (ls6 saw ~113 jobs/day in its 32-node November against
    ~164 overall), otherwise the queue would grow without bound.
    """
    hours = np.arange(int(np.ceil(span / HOUR_S)))
    stamps = origin.floor("h") + pd.to_timedelta(hours, unit="h")
    hour_w = _normalised(p["hour_shares"]) * 24
    week_w = _normalised(p["weekday_shares"]) * 7
    mean_batch = _mean_batch_size(p["batch_sizes"])
    per_hour = p["jobs_per_day"] / mean_batch / 24
    # The load curve is interpolated between day midpoints so regimes do not jump at midnight.
    day_pos = (hours + 0.5) / 24 - 0.5
    mult = np.interp(day_pos, np.arange(len(load)), load)
    cap_now = np.asarray(cap_v)[np.searchsorted(np.asarray(cap_t), hours * HOUR_S, side="right") - 1]
    lam = per_hour * hour_w[stamps.hour] * week_w[stamps.day_of_week] * mult * cap_now / max(cap_v)
    counts = rng.poisson(lam)
    shift = int((origin - origin.floor("h")).total_seconds())
    t = np.repeat(hours * HOUR_S - shift, counts) + rng.integers(0, HOUR_S, size=counts.sum())
    t = np.sort(t)
    return t[(t >= 0) & (t < span)]


def _mean_batch_size(bins) -> float:
    share = np.array([b[2] for b in bins], float)
    mid = np.array([(b[0] + b[1]) / 2 for b in bins], float)
    return float(mid @ share / share.sum())


def _draw_batch_sizes(rng: np.random.Generator, bins, n: int) -> np.ndarray:
    share = _normalised([b[2] for b in bins])
    k = rng.choice(len(bins), size=n, p=share)
    lo = np.array([b[0] for b in bins])[k]
    hi = np.array([b[1] for b in bins])[k]
    return rng.integers(lo, hi + 1)


def _draw_categorical(rng: np.random.Generator, mix: dict, n: int) -> np.ndarray:
    values = np.array([int(v) for v in mix], dtype=np.int64)
    return values[rng.choice(len(values), size=n, p=_normalised(list(mix.values())))]


def _draw_runtimes(rng: np.random.Generator, p: dict, limit_min: np.ndarray) -> np.ndarray:
    """Runtime in whole seconds, never above the limit; ratio drawn from the histogram."""
    edges = np.asarray(p["ratio_edges"], float)
    k = rng.choice(len(edges) - 1, size=len(limit_min), p=_normalised(p["ratio_shares"]))
    ratio = rng.uniform(edges[k], edges[k + 1])
    # The top bin is jobs killed at their limit: they run exactly the limit.
    ratio[k == len(edges) - 2] = 1.0
    return np.floor(ratio * limit_min * 60).astype(np.int64)


def _draw_users(rng: np.random.Generator, u: dict, batch_t: np.ndarray, span: int) -> np.ndarray:
    """User index per batch: among users active at that time, by heavy-tailed activity."""
    life_mean = float(u["mean_life_days"]) * DAY_S
    # Users may have joined before the trace begins; start the stream one lifetime earlier.
    lead = int(3 * life_mean)
    n_users = rng.poisson(float(u["joins_per_day"]) * (span + lead) / DAY_S)
    n_users = max(n_users, 1)
    joined = rng.uniform(-lead, span, size=n_users)
    left = joined + rng.exponential(life_mean, size=n_users) + DAY_S
    sigma = float(u["weight_sigma"])
    weight = np.exp(np.minimum(rng.normal(0.0, sigma, size=n_users),
                               float(u["weight_cap_sigmas"]) * sigma))

    users = np.empty(len(batch_t), dtype=np.int64)
    day = batch_t // DAY_S
    for d in np.unique(day):
        sel = np.flatnonzero(day == d)
        t_mid = (d + 0.5) * DAY_S
        active = np.flatnonzero((joined <= t_mid) & (left > t_mid))
        if len(active) == 0:  # nobody happens to be active: fall back to the nearest joiner
            active = np.array([int(np.argmin(np.abs(joined - t_mid)))])
        w = weight[active]
        users[sel] = active[rng.choice(len(active), size=len(sel), p=w / w.sum())]
    return users


def _normalised(values) -> np.ndarray:
    a = np.asarray(values, float)
    return a / a.sum()


# ---------------------------------------------------------------------------------------------
# Capacity
# ---------------------------------------------------------------------------------------------


def _capacity_schedule(p: dict, origin: pd.Timestamp) -> tuple[list[int], list[int]]:
    """Change times (s since origin, first is 0) and capacities; changes before origin apply at 0."""
    times, values = [0], [int(p["initial_capacity"])]
    for when, cap in sorted(p["capacity_changes"], key=lambda c: pd.Timestamp(c[0])):
        t = int((pd.Timestamp(when) - origin).total_seconds())
        if t <= 0:
            values[0] = int(cap)
        else:
            times.append(t)
            values.append(int(cap))
    return times, values


def _fit_to_capacity(nodes: np.ndarray, submit: np.ndarray, cap_t: list[int],
                     cap_v: list[int]) -> np.ndarray:
    """Clip node counts to the smallest capacity from submit on; Slurm rejects larger jobs."""
    future_min = np.minimum.accumulate(np.asarray(cap_v)[::-1])[::-1]
    seg = np.searchsorted(np.asarray(cap_t), submit, side="right") - 1
    return np.minimum(nodes, future_min[seg])


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def _to_table(cluster: str, jobs: dict[str, np.ndarray], origin: pd.Timestamp,
              first_job_id: int) -> pd.DataFrame:
    n = len(jobs["submit"])
    base = np.datetime64(origin.to_datetime64(), "s")

    def to_time(seconds: np.ndarray) -> np.ndarray:
        return base + seconds.astype("timedelta64[s]")

    user_no = _users_by_first_appearance(jobs["user"])
    job_ids = [str(first_job_id + i) for i in range(n)]
    df = pd.DataFrame({
        "cluster": cluster,
        "job_id": job_ids,
        "user": [f"{u:05d}" for u in user_no],
        "name": [f"batch{b}" for b in jobs["batch"]],
        "submit": to_time(jobs["submit"]),
        "start": to_time(jobs["start"]),
        "end": to_time(jobs["end"]),
        "time_limit_min": jobs["limit_min"],
        "nodes": jobs["nodes"],
        "exit_code": "0:0",
        "priority": jobs["priority"],
        "depends_on": [job_ids[a] if a >= 0 else None for a in jobs["after"]],
        "line": np.arange(1, n + 1),
    })
    return conform(df)


def _users_by_first_appearance(user: np.ndarray) -> np.ndarray:
    """Users numbered by first appearance (0, 1, ...), to be zero-padded like the trace's
    anonymised UIDs."""
    _, first_seen = np.unique(user, return_index=True)
    rank = np.empty(len(first_seen), dtype=np.int64)
    rank[np.argsort(first_seen)] = np.arange(len(first_seen))
    return rank[np.unique(user, return_inverse=True)[1]]
