"""The shape of a trace at a glance: arrivals, job mix, load and waits over time.

With a reference trace (e.g. the real ls6 beside a synthetic one) both are drawn on the same
axes, so a calibration gap shows as two curves that part.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mirage.traces.profile import HEAVY_WAIT_H, LONG_LIMIT_MIN, LOW_WAIT_H, busy_nodes, trace_profile  # noqa: E402

WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def plot_trace(jobs: pd.DataFrame, out: str | Path, *, label: str, reference: pd.DataFrame | None = None,
               reference_label: str = "reference") -> None:
    traces = [(label, jobs)] + ([(reference_label, reference)] if reference is not None else [])
    fig, axes = plt.subplots(2, 4, figsize=(18, 8), constrained_layout=True)
    for (name, df), color in zip(traces, ("tab:blue", "tab:orange")):
        prof = trace_profile(df)
        kw = dict(color=color, label=name)
        axes[0, 0].plot(range(24), np.array(prof["hour_shares"]) * 100, marker="o", **kw)
        axes[0, 1].plot(WEEKDAYS, np.array(prof["weekday_shares"]) * 100, marker="o", **kw)
        mix = prof["node_mix"]
        offset = 0.2 if name != label else -0.2
        axes[0, 2].bar(np.arange(len(mix)) + offset, np.array(list(mix.values())) * 100, width=0.4, **kw)
        axes[0, 2].set_xticks(range(len(mix)), list(mix))
        limit_h = np.sort(df["time_limit_min"].to_numpy(float) / 60)
        axes[0, 3].step(limit_h, np.arange(1, len(limit_h) + 1) / len(limit_h), where="post", **kw)
        wait_h = np.sort((df["start"] - df["submit"]).dt.total_seconds().to_numpy() / 3600)
        axes[1, 0].step(np.maximum(wait_h, 1 / 60), np.arange(1, len(wait_h) + 1) / len(wait_h), where="post", **kw)
        t0, t1 = df["submit"].min().floor("D"), df["submit"].max().floor("D") + pd.Timedelta("1D")
        # dates, not days since the start: two traces of one cluster line up in time
        busy = busy_nodes(df, t0, t1).resample("D").mean()
        axes[1, 1].plot(busy.index, busy.to_numpy(), **kw)
        daily = _daily_long_wait(df)
        axes[1, 2].plot(daily.index, np.maximum(daily.to_numpy(), 0.01), **kw)
        ratio = np.clip((df["end"] - df["start"]).dt.total_seconds().to_numpy() / 60
                        / df["time_limit_min"].to_numpy(float), 0, 1)
        axes[1, 3].hist(ratio, bins=20, range=(0, 1), density=True, histtype="step", linewidth=2, **kw)

    axes[1, 2].set_yscale("log")
    axes[1, 2].axhspan(0.01, LOW_WAIT_H, color="green", alpha=0.08, label=f"low (<= {LOW_WAIT_H:g} h)")
    axes[1, 2].axhspan(HEAVY_WAIT_H, max(axes[1, 2].get_ylim()[1], 2 * HEAVY_WAIT_H), color="red",
                       alpha=0.08, label=f"heavy (> {HEAVY_WAIT_H:g} h)")
    for ax in (axes[1, 1], axes[1, 2]):
        ax.tick_params(axis="x", labelrotation=30)
    titles = [
        ("submits by hour of day", "hour", "% of jobs"),
        ("submits by weekday", "", "% of jobs"),
        ("node-count mix", "nodes", "% of jobs"),
        ("time limits (CDF)", "limit (h)", "share of jobs"),
        ("queue wait (CDF)", "wait (h, log)", "share of jobs"),
        ("busy nodes (daily mean)", "", "nodes"),
        (f"mean wait of jobs with limit >= {LONG_LIMIT_MIN // 60} h, per submit day", "", "hours (log)"),
        ("runtime / limit", "ratio", "density"),
    ]
    for ax, (title, xl, yl) in zip(axes.flat, titles):
        ax.set_title(title)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
    axes[1, 0].set_xscale("log")
    axes[0, 0].legend()
    axes[1, 2].legend(fontsize=8)
    fig.suptitle(f"trace profile: {label}" + (f" vs {reference_label}" if reference is not None else ""))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)


def _daily_long_wait(df: pd.DataFrame) -> pd.Series:
    long = df[df["time_limit_min"] >= LONG_LIMIT_MIN]
    wait_h = (long["start"] - long["submit"]).dt.total_seconds() / 3600
    return wait_h.groupby(long["submit"].dt.floor("D")).mean()
