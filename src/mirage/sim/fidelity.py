"""How faithfully the simulator reproduces a real trace (issue 3, "Fidelity").

(a) leave-one-out what-if: every real job with a limit of at least 24 h submitted in a period is
    removed and re-submitted at its real submit time into a simulation warm-started from the
    trace at that time; its predicted start is compared with the real one.
(b) full replay: daily mean wait (by submit day) simulated vs real: Pearson correlation and the
    MAPE of the 7-day moving average.
(c) the same figures for the zero-wait predictor and the compatibility mode (the reference's
    setting: cold start at the period start, 88 nodes, its priority and backfill).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .engine import Simulator
from .jobs import JobTable, to_seconds, to_timestamp
from .cluster import ClusterDescription, compat_cluster
from .warmstart import get_static, initial_state, warm_start
from mirage.units import DAY_S, HOUR_S


LONG_LIMIT_S = 24 * HOUR_S
METRICS = ("loo_mae_h", "loo_median_h", "loo_within_1h", "replay_corr", "replay_mape")
PREDICTORS = ("sim", "zero_wait", "compat")


#: a period with fewer long jobs than this is scored on every job (see :func:`period_for`)
MIN_LONG_JOBS = 50


@dataclass(frozen=True)
class Period:
    name: str
    start: int
    end: int
    #: the leave-one-out scores the jobs submitted in the period with at least this limit
    long_limit_s: int = LONG_LIMIT_S
    #: the replay compares the mean wait per bucket of this many seconds (calendar days)
    bucket_s: int = DAY_S


def period_for(table: JobTable, name: str, start: int, end: int) -> Period:
    """A period scored at its trace's time scale: the long jobs (limit >= 24 h, the services
    this project provisions) and daily waits where it holds at least MIN_LONG_JOBS long jobs;
    otherwise (short jobs only, e.g. a time-compressed test cluster) every job, and the mean
    wait per 24th of the period (at least a minute) for the replay."""
    in_p = (table.submit >= start) & (table.submit < end)
    if int(np.sum(in_p & (table.limit >= LONG_LIMIT_S))) >= MIN_LONG_JOBS:
        return Period(name, start, end)
    return Period(name, start, end, long_limit_s=0, bucket_s=max(60, (end - start) // 24 // 60 * 60))


def scored_jobs(table: JobTable, period: Period, loo_jobs: int | None = None,
                seed: int = 0) -> tuple[int, np.ndarray]:
    """``(how many jobs the period scores, the ones scored)``: the jobs submitted in it with at
    least its ``long_limit_s``, at most ``loo_jobs`` of them (a sorted sample seeded by
    ``seed``; None: every one)."""
    in_p = (table.submit >= period.start) & (table.submit < period.end)
    jobs = np.flatnonzero(in_p & (table.limit >= period.long_limit_s))
    if loo_jobs is not None and len(jobs) > loo_jobs:
        return len(jobs), np.sort(np.random.default_rng(seed).choice(jobs, size=loo_jobs, replace=False))
    return len(jobs), jobs


def default_periods(table: JobTable, window_days: float = 5.0,
                    starts=("2022-11-01", "2023-03-01"),
                    extra=(("from 2022-11-08 (full capacity) to the end", "2022-11-08"),)
                    ) -> list[Period]:
    """The two reference windows, optional open-ended periods, then the whole trace (last)."""
    out = []
    lo, hi = int(table.submit.min()), int(table.submit.max()) + 1
    for s in starts:
        t0 = to_seconds(s)
        if lo <= t0 < hi:
            out.append(Period(f"window {s} ({window_days:g} d)", t0, t0 + int(window_days * DAY_S)))
    if extra:
        for name, a in extra:
            t0 = to_seconds(a)
            if lo <= t0 < hi:
                out.append(Period(name, t0, hi))
    out.append(Period("whole trace", lo, hi))
    return out


# ---------------------------------------------------------------------------- predictions
def loo_predictions(table: JobTable, cluster: ClusterDescription, jobs: np.ndarray,
                    max_wait_s: int = 30 * DAY_S, user_max_jobs=None) -> np.ndarray:
    """Predicted start of each job in ``jobs`` (trace indices), one warm start per job; -1 where
    the model does not start it within ``max_wait_s``."""
    out = np.full(len(jobs), -1, dtype=np.int64)
    for k, start in iter_loo_predictions(table, cluster, jobs, max_wait_s, user_max_jobs):
        out[k] = start
    return out


def iter_loo_predictions(table: JobTable, cluster: ClusterDescription, jobs: np.ndarray,
                         max_wait_s: int = 30 * DAY_S, user_max_jobs=None):
    """``(k, predicted start of jobs[k])`` one job at a time (-1: not started within
    ``max_wait_s``), so a caller can stop early."""
    static = get_static(table, cluster, user_max_jobs)
    pinned = cluster.whatif_background == "pinned"
    for k, i in enumerate(jobs.tolist()):
        t0 = int(table.submit[i])
        state = initial_state(static, t0, warm=cluster.warm_start, pinned=pinned, exclude=(i,))
        sim = Simulator(static, state, pinned=pinned)
        # a job recorded as eligible only later (held, --begin) enters the queue then
        entry = t0 if table.eligible is None else int(table.eligible[i])
        # a recorded dependency was part of the submission (sbatch --dependency); an inferred one
        # (get_static's copy of the table) is read off this job's own start and is not passed
        jid = sim.insert_job(entry, int(table.nodes[i]), int(table.limit[i]), run_s=int(table.run[i]),
                             user=int(table.user[i]), priority=float(table.tprio[i]),
                             depends_on=int(table.dep[i]))
        yield k, (int(sim.starts[jid]) if sim.run_until(t0 + max_wait_s, stop_jid=jid) else -1)


def replay_starts(table: JobTable, cluster: ClusterDescription, period: Period,
                  drain_s: int = 30 * DAY_S, user_max_jobs=None) -> np.ndarray:
    """Simulated start of every trace job when the period is replayed from its start."""
    sim = warm_start(table, cluster, period.start, record=True, pinned=False,
                     user_max_jobs=user_max_jobs)
    sim.run_until(period.end + drain_s)
    return sim.trace_start


# ---------------------------------------------------------------------------- metrics
def loo_abs_error_h(pred_start, real_start, submit):
    """|predicted - real start| in hours; a job the model never starts counts as starting at
    the end of the search horizon (30 days after its submission)."""
    pred = np.where(np.asarray(pred_start) >= 0, pred_start, np.asarray(submit) + 30 * DAY_S)
    return np.abs(pred - np.asarray(real_start)) / HOUR_S


def loo_metrics(pred_start: np.ndarray, real_start: np.ndarray, submit: np.ndarray) -> dict:
    ok = pred_start >= 0
    err_h = loo_abs_error_h(pred_start, real_start, submit)
    if len(err_h) == 0:
        return {"loo_mae_h": None, "loo_median_h": None, "loo_within_1h": None, "n": 0}
    return {
        "loo_mae_h": float(err_h.mean()),
        "loo_median_h": float(np.median(err_h)),
        "loo_within_1h": float((err_h <= 1.0).mean()),
        "n": int(len(err_h)),
        "not_started": int((~ok).sum()),
    }


def daily_mean_wait(submit: np.ndarray, start: np.ndarray, period: Period) -> pd.Series:
    m = (submit >= period.start) & (submit < period.end) & (start >= 0)
    freq = "D" if period.bucket_s == DAY_S else f"{period.bucket_s}s"
    day = pd.to_datetime(submit[m], unit="s").floor(freq)
    wait_h = (start[m] - submit[m]) / HOUR_S
    s = pd.Series(wait_h, index=day).groupby(level=0).mean()
    full = pd.date_range(to_timestamp(period.start).floor(freq),
                         to_timestamp(period.end - 1).floor(freq), freq=freq)
    return s.reindex(full)


def replay_metrics(sim_daily: pd.Series, real_daily: pd.Series) -> dict:
    both = pd.DataFrame({"sim": sim_daily, "real": real_daily}).dropna()
    corr = None
    if len(both) >= 3 and both["sim"].std() > 0 and both["real"].std() > 0:
        corr = float(np.corrcoef(both["sim"], both["real"])[0, 1])
    ape = replay_ape(sim_daily, real_daily)
    mape = float(ape.mean()) if len(ape) else None
    return {"replay_corr": corr, "replay_mape": mape, "days": int(len(both))}


def replay_ape(sim_daily: pd.Series, real_daily: pd.Series) -> pd.Series:
    """Each day's absolute percentage error of the 7-day moving mean wait: the terms whose mean
    is the replay MAPE of :func:`replay_metrics` (days with a zero real mean left out)."""
    both = pd.DataFrame({"sim": sim_daily, "real": real_daily}).dropna()
    ma = both.rolling(7, min_periods=1).mean()
    pos = ma["real"] > 0
    return (np.abs(ma["sim"] - ma["real"])[pos] / ma["real"][pos])


def _verdict(low: float, high: float) -> str:
    return "better" if high < 0 else "worse" if low > 0 else "within noise"


def paired_fidelity_difference(err_a: np.ndarray, err_b: np.ndarray, ape_a: pd.Series,
                               ape_b: pd.Series, *, n_boot: int = 2000, seed: int = 0,
                               level: float = 0.95, block_days: int = 7) -> dict:
    """Predictor a minus predictor b on the same period, each figure with a paired bootstrap
    interval: the leave-one-out MAE and median over the same jobs (``err_a``, ``err_b``: each
    job's absolute error, h), resampled job by job; the replay MAPE over the same days
    (``ape_a``, ``ape_b``: :func:`replay_ape`), resampled in blocks of ``block_days``
    consecutive days, since a 7-day moving mean ties neighbouring days together. Negative: a
    is closer to the trace. Each figure: {"diff", "low", "high", "verdict"}, the verdict
    "better" / "worse" where the interval excludes zero, else "within noise"."""
    rng = np.random.default_rng(seed)
    q = ((1 - level) / 2, (1 + level) / 2)
    err_a, err_b = np.asarray(err_a, float), np.asarray(err_b, float)
    out = {}
    if len(err_a):
        idx = rng.integers(0, len(err_a), size=(n_boot, len(err_a)))
        for name, f in (("loo_mae_h", np.mean), ("loo_median_h", np.median)):
            boot = f(err_a[idx], axis=1) - f(err_b[idx], axis=1)
            low, high = np.quantile(boot, q)
            out[name] = {"diff": float(f(err_a) - f(err_b)), "low": float(low), "high": float(high),
                         "verdict": _verdict(low, high)}
    days = pd.DataFrame({"a": ape_a, "b": ape_b}).dropna()
    if len(days):
        d = (days["a"] - days["b"]).to_numpy()
        n, blk = len(d), max(1, min(block_days, len(d)))
        starts = rng.integers(0, n - blk + 1, size=(n_boot, -(-n // blk)))
        idx = (starts[:, :, None] + np.arange(blk)).reshape(n_boot, -1)[:, :n]
        boot = d[idx].mean(axis=1)
        low, high = np.quantile(boot, q)
        out["replay_mape"] = {"diff": float(d.mean()), "low": float(low), "high": float(high),
                              "verdict": _verdict(low, high), "days": int(n)}
    return out


# ---------------------------------------------------------------------------- report
def evaluate_period(table: JobTable, cluster: ClusterDescription, period: Period,
                    compat: ClusterDescription | None = None, user_max_jobs=None,
                    baselines: bool = True, points: list | None = None,
                    loo_cache: dict | None = None, loo_jobs: int | None = None,
                    seed: int = 0) -> dict:
    """All figures of one period; ``baselines=False`` skips the compat simulation (its entries
    then repeat the zero-wait ones and must not be read). With a list ``points``, the period's
    leave-one-out jobs are appended to it as one table (see loo_points). ``loo_cache``: trace
    index -> leave-one-out start, shared by the periods of one report (a job's prediction does
    not depend on the period it is scored in, and the windows lie inside the whole trace).
    ``loo_jobs``: score at most this many of the period's long jobs, a sample seeded by
    ``seed`` (the leave-one-out what-ifs are the slow part); None scores every one."""
    compat = compat or compat_cluster(cluster.cluster)
    in_p = (table.submit >= period.start) & (table.submit < period.end)
    n_long, long_jobs = scored_jobs(table, period, loo_jobs, seed)
    real = table.start[long_jobs]
    sub = table.submit[long_jobs]
    res: dict = {"period": {"name": period.name, "start": str(to_timestamp(period.start)),
                            "end": str(to_timestamp(period.end)), "jobs": int(in_p.sum()),
                            "long_jobs": int(n_long), "loo_jobs": int(len(long_jobs)),
                            "long_limit_h": period.long_limit_s / HOUR_S, "bucket_h": period.bucket_s / HOUR_S}}
    cache = {} if loo_cache is None else loo_cache
    todo = np.array([i for i in long_jobs.tolist() if i not in cache], dtype=np.int64)
    cache.update(zip(todo.tolist(), loo_predictions(
        table, cluster, todo, user_max_jobs=user_max_jobs).tolist()))
    loo_sim = np.array([cache[i] for i in long_jobs.tolist()], dtype=np.int64)
    compat_starts = replay_starts(table, compat, period) if baselines else table.submit
    sim_starts = replay_starts(table, cluster, period, user_max_jobs=user_max_jobs)
    loo = {
        "sim": loo_metrics(loo_sim, real, sub),
        "zero_wait": loo_metrics(sub.copy(), real, sub),
        "compat": loo_metrics(compat_starts[long_jobs], real, sub),
    }
    real_daily = daily_mean_wait(table.submit, table.start, period)
    rep = {
        "sim": replay_metrics(daily_mean_wait(table.submit, sim_starts, period), real_daily),
        "zero_wait": replay_metrics(daily_mean_wait(table.submit, table.submit, period), real_daily),
        "compat": replay_metrics(daily_mean_wait(table.submit, compat_starts, period), real_daily),
    }
    if points is not None:
        points.append(loo_points(table, long_jobs, loo_sim, compat_starts[long_jobs], period))
    for m in METRICS:
        src = loo if m.startswith("loo") else rep
        res[m] = {p: src[p][m] for p in PREDICTORS}
    res["daily"] = {
        "day": [str(d.date()) for d in real_daily.index],
        "real": _nan_to_none(real_daily.to_numpy()),
        "sim": _nan_to_none(daily_mean_wait(table.submit, sim_starts, period).to_numpy()),
        "compat": _nan_to_none(daily_mean_wait(table.submit, compat_starts, period).to_numpy()),
    }
    return res


def loo_points(table: JobTable, jobs: np.ndarray, sim_start: np.ndarray,
               compat_start: np.ndarray, period: Period) -> pd.DataFrame:
    """One row per leave-one-out job of a period: its real start and the predicted ones
    (``sim_start``: the warm-started what-if; ``compat_start``: the compat replay; NaT where
    the prediction never starts it; the zero-wait prediction is the submit itself)."""
    def times(s):
        s = np.asarray(s, dtype=np.int64)
        return pd.Series(np.where(s >= 0, s, 0).astype("datetime64[s]")).where(s >= 0)

    return pd.DataFrame({
        "period": period.name,
        "job_id": table.job_id[jobs].astype(str),
        "nodes": table.nodes[jobs].astype(np.int64),
        "limit_h": table.limit[jobs] / HOUR_S,
        "submit": times(table.submit[jobs]),
        "real_start": times(table.start[jobs]),
        "sim_start": times(sim_start),
        "compat_start": times(compat_start),
    })


#: named changes to the calibrated cluster description, evaluated by ``mirage sim fidelity --variants``
VARIANTS = {
    "no trace priority": lambda p: p.with_(priority={"weight_trace": 0.0}),
    "no inferred dependencies": lambda p: p.with_(infer_dependencies=False),
    "no per-user limit": lambda p: p.with_(max_jobs_per_user=None),
    "reference priority weights (age 7000)": lambda p: p.with_(priority={"weight_age": 7000.0}),
    "EASY backfill": lambda p: p.with_(backfill={"mode": "easy"}),
    "no backfill": lambda p: p.with_(backfill={"mode": "none"}),
    "bf_window 1440, bf_max_job_test 100 (Slurm defaults)":
        lambda p: p.with_(backfill={"window_min": 1440, "max_job_test": 100}),
    "bf_resolution 60": lambda p: p.with_(backfill={"resolution_s": 60}),
    "constant capacity (the description's nodes)": lambda p: p.with_(capacity=()),
    "capacity inferred per week": lambda p: p.with_(capacity=(), capacity_infer=True),
    "inferred holds (circular for replay)": lambda p: p.with_(infer_holds=True),
    "pinned background in what-if": lambda p: p.with_(whatif_background="pinned"),
    "pin idle waiters at warm start": lambda p: p.with_(pin_idle_waiters=True),
    "cold start": lambda p: p.with_(warm_start=False),
}


def evaluate_variants(table: JobTable, cluster: ClusterDescription, periods: list[Period],
                      names=None) -> dict:
    """The ``sim`` figures of each variant, per period (ablation of the calibrated description)."""
    out: dict = {}
    for name in (names or VARIANTS):
        variant = VARIANTS[name](cluster)
        out[name] = {}
        for per in periods:
            r = evaluate_period(table, variant, per, baselines=False)
            out[name][per.name] = {m: r[m]["sim"] for m in METRICS}
    return out


def _nan_to_none(a) -> list:
    return [None if (x is None or (isinstance(x, float) and math.isnan(x))) else float(x) for x in a]


def fidelity_report(table: JobTable, cluster: ClusterDescription, periods: list[Period] | None = None,
                    user_max_jobs=None, variants: bool = False, points: list | None = None,
                    loo_jobs: int | None = None, seed: int = 0) -> dict:
    """The fidelity report: top-level metric keys hold the whole-trace figures; ``periods`` holds
    every period's figures (the two reference windows and the whole trace). With a list
    ``points``, every period's leave-one-out jobs are appended to it (loo_points).
    ``loo_jobs``: the whole trace scores a seeded sample of at most that many long jobs (the
    windows score every one of theirs); None: every long job."""
    periods = periods or default_periods(table)
    cache: dict = {}  # each job's leave-one-out start, computed once for every period
    per = [evaluate_period(table, cluster, p, user_max_jobs=user_max_jobs, points=points,
                           loo_cache=cache, loo_jobs=loo_jobs if i == len(periods) - 1 else None,
                           seed=seed)
           for i, p in enumerate(periods)]
    main = per[-1]
    report = {m: main[m] for m in METRICS}
    report["cluster"] = cluster.cluster
    report["description"] = _description(cluster)
    report["periods"] = per
    if variants:
        # the whole trace's leave-one-out is the slow part; ablate on the windows only
        windows = [p for p in periods if p.end - p.start <= 31 * DAY_S] or periods[:1]
        report["variants"] = evaluate_variants(table, cluster, windows)
    report["notes"] = (
        "zero_wait replay_corr is undefined (a constant series has no correlation) and reported "
        "as null; replay_mape of zero_wait is 1.0 by construction."
    )
    return report


def _description(p: ClusterDescription) -> dict:
    """The cluster description the report was made with, as JSON."""
    return {
        "nodes": p.nodes, "capacity": [[str(to_timestamp(t)), n] for t, n in p.capacity],
        "priority": p.priority.__dict__, "backfill": p.backfill.__dict__,
        "max_jobs_per_user": p.max_jobs_per_user, "max_nodes_per_user": p.max_nodes_per_user,
        "warm_start": p.warm_start, "infer_dependencies": p.infer_dependencies,
        "whatif_background": p.whatif_background,
    }


def write_report(report: dict, out: str | Path) -> Path:
    """The report as JSON at ``out`` (its figures: ``mirage figures fidelity``)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    return out
