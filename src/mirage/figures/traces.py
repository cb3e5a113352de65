"""The shape of a trace at a glance: arrivals, job mix, load, queue and waits over time.

With a reference trace (e.g. the real ls6 beside a synthetic one) both are drawn on the same
axes, so a calibration gap shows as two curves that part. What is drawn of a trace is its
mirage.traces.summary.overview (mirage.figures.cli computes it from the clean table).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.figures.style import DOUBLE_W, date_axis, log_axis, styled
from mirage.traces.summary import HEAVY_WAIT_H, LONG_LIMIT_MIN, LOW_WAIT_H

WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
TRACE_COLORS = ("#1f77b4", "#e66100")  # the trace, the reference


def trace_figures(traces: list[tuple[str, dict]]) -> dict:
    """{"trace_overview": Figure} of ``traces``: (name, mirage.traces.summary.overview) of the
    trace, then of an optional reference. Six distributions (submits by hour and weekday,
    node-count mix, limits, waits, runtime / limit) above three series over time (busy nodes,
    queue length, mean wait of long jobs per day)."""
    return {"trace_overview": _overview(traces)}


@styled
def _overview(traces):
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(DOUBLE_W, 8.6))
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.0, 1.15])
    dist = top.subplots(2, 3)
    series = bottom.subplots(3, 1, sharex=True)
    width = 0.8 / len(traces)
    for n, ((name, view), color) in enumerate(zip(traces, TRACE_COLORS)):
        prof = view["summary"]
        kw = dict(color=color, label=name)
        dist[0, 0].plot(range(24), np.array(prof["hour_shares"]) * 100, marker="o", ms=2.5, **kw)
        dist[0, 1].plot(WEEKDAYS, np.array(prof["weekday_shares"]) * 100, marker="o", ms=2.5, **kw)
        mix = prof["node_mix"]
        offset = (n - (len(traces) - 1) / 2) * width
        dist[0, 2].bar(np.arange(len(mix)) + offset, np.array(list(mix.values())) * 100,
                       width=width, **kw)
        dist[0, 2].set_xticks(range(len(mix)), list(mix))
        _cdf(dist[1, 0], view["limit_h"], **kw)
        _cdf(dist[1, 1], np.maximum(view["wait_h"], 1 / 60), **kw)
        dist[1, 2].hist(view["ratio"], bins=20, range=(0, 1), density=True, histtype="step",
                        lw=1.3, **kw)

        # dates, not days since the start: two traces of one cluster line up in time
        for ax, level in ((series[0], view["busy"]), (series[1], view["queued"])):
            hourly = level.resample("h").mean()
            ax.plot(hourly.index, hourly.to_numpy(), color=color, lw=0.5, alpha=0.45)
            daily = level.resample("D").mean()
            ax.plot(daily.index + pd.Timedelta("12h"), daily.to_numpy(), lw=1.3,
                    label=f"{name} (daily mean)" if ax is series[0] else None, color=color)
        daily = view["daily_long_wait"]
        series[2].plot(daily.index + pd.Timedelta("12h"), np.maximum(daily.to_numpy(), 0.01),
                       marker="o", ms=2, lw=1.1, color=color)

    ax = series[2]
    log_axis(ax, "y")
    ax.axhspan(0.01, LOW_WAIT_H, color="green", alpha=0.08, lw=0, label=f"low (<= {LOW_WAIT_H:g} h)")
    ax.axhspan(HEAVY_WAIT_H, max(ax.get_ylim()[1], 2 * HEAVY_WAIT_H), color="red", alpha=0.08,
               lw=0, label=f"heavy (> {HEAVY_WAIT_H:g} h)")
    ax.legend(loc="upper left", ncols=2)
    series[0].legend(loc="upper left", ncols=2)
    for ax, title, yl in (
        (dist[0, 0], "submits by hour of day", "% of jobs"),
        (dist[0, 1], "submits by weekday", "% of jobs"),
        (dist[0, 2], "node-count mix", "% of jobs"),
        (dist[1, 0], "time limit (CDF)", "share of jobs"),
        (dist[1, 1], "queue wait (CDF)", "share of jobs"),
        (dist[1, 2], "runtime / limit", "density"),
        (series[0], "busy nodes (hourly, daily mean)", "nodes"),
        (series[1], "queue length: jobs waiting (hourly, daily mean)", "jobs"),
        (series[2], f"mean wait of jobs with limit >= {LONG_LIMIT_MIN // 60} h, per submit day",
         "wait [h]"),
    ):
        ax.set_title(title)
        ax.set_ylabel(yl)
    dist[0, 0].set_xlabel("hour")
    dist[0, 0].set_xticks(range(0, 24, 6))
    dist[0, 2].set_xlabel("nodes")
    dist[1, 0].set_xlabel("limit [h]")
    dist[1, 1].set_xlabel("wait [h]")
    log_axis(dist[1, 1], "x")
    dist[1, 2].set_xlabel("ratio")
    if len(traces) > 1:
        dist[0, 0].legend()
    date_axis(series[2], max(view["span_days"] for _, view in traces))
    fig.suptitle("Trace summary: " + " vs ".join(name for name, _ in traces))
    return fig


def _cdf(ax, values, **kw):
    v = np.sort(np.asarray(values, dtype=float))
    if len(v):
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", lw=1.2, **kw)
