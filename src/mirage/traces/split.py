"""Chronological train/validation split of a clean trace.

A window keeps every job it needs, not just the jobs submitted inside it: a sample that
starts near the window's beginning warm-starts from the jobs running and pending then and
looks back over a feature history, and one near its end replays a few days past it. So each
split holds the jobs whose life [submit, end] overlaps
``[window start - history, window end + horizon]``; ``in_window`` marks the jobs submitted
inside the window itself.
"""

from __future__ import annotations

import pandas as pd

from mirage.errors import MirageError


def split_window(
    jobs: pd.DataFrame, start, end, *, history_hours: float, horizon_hours: float
) -> pd.DataFrame:
    """Jobs a window [start, end] (both dates inclusive, whole days) needs, with ``in_window``."""
    lo = pd.Timestamp(start)
    hi = pd.Timestamp(end) + pd.Timedelta(days=1)  # an end date means the whole day
    if hi <= lo:
        raise MirageError(f"window end {end} is before its start {start}; fix the dates in the config")
    reach_lo = lo - pd.Timedelta(hours=history_hours)
    reach_hi = hi + pd.Timedelta(hours=horizon_hours)
    needed = (jobs["end"] >= reach_lo) & (jobs["submit"] < reach_hi)
    out = jobs.loc[needed].copy()
    out["in_window"] = (out["submit"] >= lo) & (out["submit"] < hi)
    return out.reset_index(drop=True)


def check_coverage(jobs: pd.DataFrame, start, end, name: str) -> None:
    """Refuse a window that lies outside the trace, naming both spans."""
    first, last = jobs["submit"].min(), jobs["submit"].max()
    if pd.Timestamp(start) > last or pd.Timestamp(end) + pd.Timedelta(days=1) <= first:
        raise MirageError(
            f"the {name} window {start}..{end} lies outside the trace ({first}..{last}); "
            "fix the window dates in the config or use a trace that covers them"
        )
