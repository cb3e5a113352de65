"""Comparable statistics of a job trace, and the differences between two traces.

Used to check the synthetic generator against a real trace (tests) and for figures
(``overview``: what the trace figure, mirage.figures.traces, draws). All statistics of
``trace_summary`` are plain floats, lists or dicts so a summary serialises to JSON as it is.

Arrival, mix and wait statistics cover jobs *submitted* in the window; busy nodes count every
job *running* in the window, whenever it was submitted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.units import HOUR_S

#: Node-count classes of the mix: (label, smallest, largest).
NODE_CLASSES = (("1", 1, 1), ("2-3", 2, 3), ("4-7", 4, 7), ("8-15", 8, 15), ("16+", 16, None))
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
#: Load levels of a day by the mean wait of its long jobs (limit >= 24 h), hours; the same
#: thresholds the study uses for a 48 h chain job's interruption (low <= 2 h, heavy > 12 h).
LOW_WAIT_H, HEAVY_WAIT_H = 2.0, 12.0
LONG_LIMIT_MIN = 1440
GRID = "10min"


def trace_summary(df: pd.DataFrame, start=None, end=None) -> dict:
    """Statistics of a clean job table over ``[start, end)`` (default: first to last submit)."""
    t0 = pd.Timestamp(start) if start is not None else df["submit"].min().floor("D")
    t1 = pd.Timestamp(end) if end is not None else df["submit"].max().floor("D") + pd.Timedelta("1D")
    win = df[(df["submit"] >= t0) & (df["submit"] < t1)]
    days = (t1 - t0) / pd.Timedelta("1D")

    limit = win["time_limit_min"].to_numpy(float)
    run_min = (win["end"] - win["start"]).dt.total_seconds().to_numpy() / 60
    wait_min = (win["start"] - win["submit"]).dt.total_seconds().to_numpy() / 60
    ratio = np.clip(run_min / limit, 0.0, 1.0)

    busy = busy_nodes(df, t0, t1)
    daily_busy = busy.resample("D").mean()
    return {
        "days": float(days),
        "jobs": int(len(win)),
        "jobs_per_day": float(len(win) / days),
        "hour_shares": _shares(win["submit"].dt.hour, range(24)),
        "weekday_shares": _shares(win["submit"].dt.day_of_week, range(7)),
        "node_mix": _node_mix(win["nodes"].to_numpy(int)),
        "limit_48h_share": float(np.mean(limit == 2880)),
        "limit_quantiles_min": _quantiles(limit),
        "ratio_quantiles": _quantiles(ratio),
        "wait_quantiles_min": _quantiles(wait_min, (0.5, 0.75, 0.9, 0.95)),
        "wait_over_1h_share": float(np.mean(wait_min > 60)),
        "wait_over_10min_share": float(np.mean(wait_min > 10)),
        "busy_nodes_mean": float(busy.mean()),
        "busy_nodes_max": float(busy.max()),
        "daily_busy_quantiles": _quantiles(daily_busy.to_numpy()),
        "load_days": _load_days(win),
        "max_running_per_user": _max_running_per_user(df),
        "users": int(win["user"].nunique()),
    }


def overview(df: pd.DataFrame) -> dict:
    """What the trace overview figure draws of a clean job table: its ``summary``
    (trace_summary), per job the ``limit_h``, ``wait_h`` and ``ratio`` (runtime / limit, in
    [0, 1]), the ``busy`` nodes and ``queued`` jobs every 10 minutes from the first submit's day
    to the day after the last, the ``daily_long_wait`` (mean wait in hours of the jobs with a
    limit of at least LONG_LIMIT_MIN, per submit day) and the ``span_days`` of the submits."""
    t0, t1 = df["submit"].min().floor("D"), df["submit"].max().floor("D") + pd.Timedelta("1D")
    run_min = (df["end"] - df["start"]).dt.total_seconds().to_numpy() / 60
    return {
        "summary": trace_summary(df),
        "limit_h": df["time_limit_min"].to_numpy(float) / 60,
        "wait_h": (df["start"] - df["submit"]).dt.total_seconds().to_numpy() / HOUR_S,
        "ratio": np.clip(run_min / df["time_limit_min"].to_numpy(float), 0, 1),
        "busy": busy_nodes(df, t0, t1),
        "queued": queued_jobs(df, t0, t1),
        "daily_long_wait": _daily_long_wait(df),
        "span_days": (df["submit"].max() - df["submit"].min()) / pd.Timedelta("1D"),
    }


def _daily_long_wait(df: pd.DataFrame) -> pd.Series:
    long = df[df["time_limit_min"] >= LONG_LIMIT_MIN]
    wait_h = (long["start"] - long["submit"]).dt.total_seconds() / HOUR_S
    return wait_h.groupby(long["submit"].dt.floor("D")).mean()


def compare_summaries(a: dict, b: dict) -> dict:
    """Differences of summary ``a`` from reference ``b``, per statistic.

    Scalars: ``{"a", "b", "abs": a - b, "rel": (a - b) / b}``. Lists and dicts of numbers
    (shares, quantiles): ``{"a", "b", "abs": per-entry a - b, "max_abs": largest |a - b|}``.
    """
    out = {}
    for key in a.keys() & b.keys():
        va, vb = a[key], b[key]
        if isinstance(va, dict):
            keys = [k for k in vb if k in va]
            diff = {k: va[k] - vb[k] for k in keys}
            out[key] = {"a": va, "b": vb, "abs": diff,
                        "max_abs": max((abs(d) for d in diff.values()), default=0.0)}
        elif isinstance(va, list):
            diff = [x - y for x, y in zip(va, vb)]
            out[key] = {"a": va, "b": vb, "abs": diff,
                        "max_abs": max((abs(d) for d in diff), default=0.0)}
        else:
            out[key] = {"a": va, "b": vb, "abs": va - vb,
                        "rel": (va - vb) / vb if vb else float("nan")}
    return dict(sorted(out.items()))


def _shares(values: pd.Series, categories) -> list[float]:
    counts = values.value_counts().reindex(list(categories), fill_value=0)
    total = counts.sum()
    return [float(c / total) if total else 0.0 for c in counts]


def _node_mix(nodes: np.ndarray) -> dict[str, float]:
    n = max(len(nodes), 1)
    mix = {}
    for label, lo, hi in NODE_CLASSES:
        inside = (nodes >= lo) & ((nodes <= hi) if hi is not None else True)
        mix[label] = float(np.sum(inside) / n)
    return mix


def _quantiles(x: np.ndarray, qs=QUANTILES) -> dict[str, float]:
    if len(x) == 0:
        return {f"q{round(q * 100)}": float("nan") for q in qs}
    return {f"q{round(q * 100)}": float(v) for q, v in zip(qs, np.quantile(x, qs))}


def busy_nodes(df: pd.DataFrame, t0: pd.Timestamp, t1: pd.Timestamp) -> pd.Series:
    """Nodes in use sampled every 10 minutes over the window."""
    return _level(df["start"], df["end"], df["nodes"].to_numpy(np.int64), t0, t1)


def queued_jobs(df: pd.DataFrame, t0: pd.Timestamp, t1: pd.Timestamp) -> pd.Series:
    """Jobs waiting in the queue (submitted, not yet started) sampled every 10 minutes."""
    return _level(df["submit"], df["start"], np.ones(len(df), np.int64), t0, t1)


def _level(on: pd.Series, off: pd.Series, weight: np.ndarray, t0, t1) -> pd.Series:
    """The sum of ``weight`` over the intervals [on, off) that cover each 10-minute grid time."""
    grid = pd.date_range(t0, t1, freq=GRID, inclusive="left")
    times = np.concatenate([on.to_numpy("datetime64[s]"), off.to_numpy("datetime64[s]")])
    delta = np.concatenate([weight, -weight])
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(delta[order])
    idx = np.searchsorted(times, grid.to_numpy("datetime64[s]"), side="right") - 1
    out = np.where(idx >= 0, level[np.maximum(idx, 0)], 0)
    return pd.Series(out.astype(float), index=grid)


def _load_days(win: pd.DataFrame) -> dict[str, float]:
    """Share of days whose long jobs waited on average <= 2 h (low), 2-12 h, > 12 h (heavy)."""
    daily = _daily_long_wait(win)
    if daily.empty:
        return {"low": float("nan"), "medium": float("nan"), "heavy": float("nan")}
    low = float(np.mean(daily <= LOW_WAIT_H))
    heavy = float(np.mean(daily > HEAVY_WAIT_H))
    return {"low": low, "medium": 1.0 - low - heavy, "heavy": heavy}


def _max_running_per_user(df: pd.DataFrame) -> int:
    """Most jobs any one user had running at the same time (an end frees before a start)."""
    if df.empty:
        return 0
    user = pd.factorize(df["user"].astype("string").fillna("?"))[0]
    t = np.concatenate([df["start"].to_numpy("datetime64[s]").astype(np.int64),
                        df["end"].to_numpy("datetime64[s]").astype(np.int64)])
    u = np.concatenate([user, user])
    d = np.concatenate([np.ones(len(df), np.int64), -np.ones(len(df), np.int64)])
    # Sorted by user, then time, ends first: a user's events sum to zero, so the running
    # sum restarts at zero for each user and its maximum is the per-user concurrency.
    order = np.lexsort((d, t, u))
    return int(np.cumsum(d[order]).max())
