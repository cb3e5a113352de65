"""Figures of the simulator's fidelity, drawn from ``mirage sim fidelity``'s report (JSON) and
its leave-one-out points (``--points``, one row per probed job and period).

daily_wait: simulated vs real daily mean wait, per period (sim, compat, zero-wait);
fidelity_metrics: the report's numbers side by side; loo_wait: predicted vs real wait of
every leave-one-out job; loo_error: the distribution of the start errors behind the MAE.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.figures.style import (
    DOUBLE_W, ROLE_COLORS, date_axis, legend_below, log_axis, plain_ticks, styled,
)

from mirage.units import HOUR_S

PREDICTORS = ("sim", "zero_wait", "compat")
PREDICTOR_LABELS = {"real": "real", "sim": "simulator (warm start)", "zero_wait": "zero wait",
                    "compat": "compat (reference setting)"}
LINES = {"real": "-", "sim": "-", "compat": (0, (4, 1.5)), "zero_wait": (0, (1, 1.2))}
#: the metrics count a job the simulator never starts as starting 30 days after its submit
NOT_STARTED_H = 30 * 24.0
FLOOR_H = 1 / 60  # a wait under a minute drawn at a minute on log axes


def _short(period: dict) -> str:
    return period["period"]["name"].split(" (")[0]


def _grid(n: int, width: float = DOUBLE_W, height: float = 2.3):
    import matplotlib.pyplot as plt

    ncols = 1 if n == 1 else 2
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False,
                             figsize=(width if ncols > 1 else width / 2 + 0.3, height * nrows + 0.7))
    for ax in axes.flat[n:]:
        ax.set_axis_off()
    return fig, axes


@styled
def daily_wait_figure(report: dict, title: str = ""):
    """Real and simulated mean wait by submit day, one panel per period; over a month the 7-day
    moving averages (what replay_mape compares) on a symlog axis."""
    periods = report["periods"]
    fig, axes = _grid(len(periods))
    for ax, per in zip(axes.flat, periods):
        d = per["daily"]
        days = pd.to_datetime(d["day"])
        long = len(days) > 31
        real = pd.Series([np.nan if v is None else v for v in d["real"]], dtype=float)
        series = {key: pd.Series([np.nan if v is None else v for v in d[key]], dtype=float)
                  for key in ("real", "sim", "compat") if key in d}
        # the zero-wait predictor's daily mean is 0 on every day with a submit
        series["zero_wait"] = real.where(real.isna(), 0.0)
        for key in ("real", "sim", "compat", "zero_wait"):
            if key not in series:
                continue
            y = series[key]
            if long:  # daily means of months are noise; show what the MAPE compares
                y = y.rolling(7, min_periods=1).mean()
            ax.plot(days + pd.Timedelta("12h"), y.to_numpy(), color=ROLE_COLORS[key],
                    ls=LINES[key], lw=1.4 if key == "real" else 1.1, label=PREDICTOR_LABELS[key],
                    marker=None if long else "o", ms=2.5)
        if long:
            ax.set_yscale("symlog", linthresh=1.0)
            plain_ticks(ax.yaxis)
        corr, mape = per.get("replay_corr", {}).get("sim"), per.get("replay_mape", {}).get("sim")
        stats = ", ".join(s for s in (f"corr {corr:.2f}" if corr is not None else "",
                                      f"MAPE {mape:.2f}" if mape is not None else "") if s)
        ax.set_title(per["period"]["name"] + (f"\nsimulator: {stats}" if stats else ""))
        ax.set_ylabel("7-day mean wait [h]" if long else "daily mean wait [h]")
        date_axis(ax, len(days))
    legend_below(fig, axes, ncols=4)
    fig.suptitle(title or "Daily mean wait, simulated vs real")
    return fig


@styled
def fidelity_metrics_figure(report: dict, title: str = ""):
    """The report's leave-one-out and replay numbers, per period and predictor."""
    import matplotlib.pyplot as plt

    periods = report["periods"]
    names = [_short(p).replace("window ", "window\n") for p in periods]
    metrics = (("loo_mae_h", "leave-one-out MAE of start [h]"),
               ("loo_within_1h", "leave-one-out: share within 1 h"),
               ("replay_corr", "replay: correlation of daily waits"),
               ("replay_mape", "replay: MAPE of 7-day mean wait"))
    fig, axes = plt.subplots(2, 2, figsize=(DOUBLE_W, 4.6), squeeze=False)
    w = 0.8 / len(PREDICTORS)
    x = np.arange(len(periods))
    for ax, (key, label) in zip(axes.flat, metrics):
        for k, pred in enumerate(PREDICTORS):
            vals = np.array([np.nan if p.get(key, {}).get(pred) is None else p[key][pred]
                             for p in periods], dtype=float)
            at = x + (k - (len(PREDICTORS) - 1) / 2) * w
            ok = np.isfinite(vals)
            ax.bar(at[ok], vals[ok], w, color=ROLE_COLORS[pred], label=PREDICTOR_LABELS[pred])
            for xa in at[~ok]:
                ax.text(xa, 0, "n/a", rotation=90, ha="center", va="bottom", fontsize=5.5,
                        color="dimgrey")
        ax.set_xticks(x, names)
        ax.set_ylabel(label)
        ax.grid(False, axis="x")
    legend_below(fig, axes, ncols=3)
    fig.suptitle(title or "Simulator fidelity")
    return fig


def loo_waits(points: pd.DataFrame) -> pd.DataFrame:
    """``points`` with real_wait_h, sim_wait_h, compat_wait_h (NaN where never started) and
    the absolute start error of each predictor, ``err_<predictor>_h``, counted as the metrics
    count it (a job never started: at NOT_STARTED_H after its submit)."""
    out = points.copy()
    for key in ("real", "sim", "compat"):
        col = f"{key}_start"
        if col in out.columns:
            out[f"{key}_wait_h"] = (out[col] - out["submit"]).dt.total_seconds() / HOUR_S
    for pred in PREDICTORS:
        wait = (pd.Series(0.0, index=out.index) if pred == "zero_wait"
                else out.get(f"{pred}_wait_h"))
        if wait is not None:
            out[f"err_{pred}_h"] = (wait.fillna(NOT_STARTED_H) - out["real_wait_h"]).abs()
    return out


@styled
def loo_wait_figure(points: pd.DataFrame, title: str = ""):
    """Predicted against real wait of every leave-one-out job, one panel per period, log axes
    (waits under a minute at a minute; a job never started at the top edge, as x)."""
    waits = loo_waits(points)
    periods = list(dict.fromkeys(waits["period"]))
    fig, axes = _grid(len(periods), height=2.6)
    top = NOT_STARTED_H
    for ax, name in zip(axes.flat, periods):
        d = waits[waits["period"] == name]
        real = np.maximum(d["real_wait_h"].to_numpy(float), FLOOR_H)
        for pred, size, alpha in (("compat", 5, 0.35), ("sim", 6, 0.55)):
            if f"{pred}_wait_h" not in d.columns:
                continue
            y = d[f"{pred}_wait_h"].to_numpy(float)
            started = np.isfinite(y)
            ax.scatter(real[started], np.maximum(y[started], FLOOR_H), s=size, alpha=alpha, lw=0,
                       color=ROLE_COLORS[pred], label=PREDICTOR_LABELS[pred], rasterized=True)
            if (~started).any():
                ax.scatter(real[~started], np.full((~started).sum(), top), s=12, marker="x",
                           lw=0.7, color=ROLE_COLORS[pred],
                           label=f"{PREDICTOR_LABELS[pred]}: never started")
        ax.plot([FLOOR_H, top], [FLOOR_H, top], color="black", lw=0.7, ls=":", label="exact")
        log_axis(ax, "x")
        log_axis(ax, "y")
        ax.set_xlim(FLOOR_H / 1.5, top * 1.5)
        ax.set_ylim(FLOOR_H / 1.5, top * 1.5)
        mae = d["err_sim_h"].mean() if "err_sim_h" in d.columns else np.nan
        ax.set_title(f"{name.split(' (')[0]}\n{len(d)} jobs"
                     + (f", simulator MAE {mae:.1f} h" if np.isfinite(mae) else ""))
        ax.set_xlabel("real wait [h]")
        ax.set_ylabel("predicted wait [h]")
    legend_below(fig, axes, ncols=3, markerscale=2.5)
    fig.suptitle((title or "Leave-one-out: predicted vs real wait of jobs >= 24 h")
                 + "\n(waits under a minute at one minute)")
    return fig


@styled
def loo_error_figure(points: pd.DataFrame, title: str = ""):
    """CDF of the absolute start error of every leave-one-out job per predictor, one panel
    per period (the MAE, median and share within 1 h of the report are read off it)."""
    waits = loo_waits(points)
    periods = list(dict.fromkeys(waits["period"]))
    fig, axes = _grid(len(periods))
    for ax, name in zip(axes.flat, periods):
        d = waits[waits["period"] == name]
        for pred in PREDICTORS:
            if f"err_{pred}_h" not in d.columns:
                continue
            e = np.sort(np.maximum(d[f"err_{pred}_h"].to_numpy(float), FLOOR_H))
            if len(e):
                ax.step(e, np.arange(1, len(e) + 1) / len(e), where="post", lw=1.2,
                        color=ROLE_COLORS[pred], ls=LINES[pred], label=PREDICTOR_LABELS[pred])
        ax.axvline(1.0, color="grey", lw=0.7, ls="--")
        log_axis(ax, "x")
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{name.split(' (')[0]}: {len(d)} jobs")
        ax.set_xlabel("|predicted − real start| [h]")
        ax.set_ylabel("share of jobs")
    legend_below(fig, axes, ncols=3)
    fig.suptitle(title or "Leave-one-out start error, jobs >= 24 h (dashed: 1 h)")
    return fig


def fidelity_figures(report: dict, points: pd.DataFrame | None = None, label: str = ""):
    """Every fidelity figure: yields ``(name, figure, note)`` (figure None where there is
    nothing to draw, the note says why)."""
    prefix = f"{label}: " if label else ""
    periods = report.get("periods") or []
    if not periods:
        yield "daily_wait", None, "the report has no periods"
        return
    if all("daily" in p for p in periods):
        yield "daily_wait", daily_wait_figure(
            report, prefix + "daily mean wait, simulated vs real"), ""
    else:
        yield "daily_wait", None, "the report has no daily waits (written by an older mirage)"
    yield "fidelity_metrics", fidelity_metrics_figure(report, prefix + "simulator fidelity"), ""
    if points is None or points.empty:
        why = ("no leave-one-out points (mirage sim fidelity --points)" if points is None
               else "the leave-one-out points table is empty (no job >= 24 h in any period)")
        yield "loo_wait", None, why
        yield "loo_error", None, why
        return
    yield "loo_wait", loo_wait_figure(
        points, prefix + "leave-one-out, predicted vs real wait (jobs >= 24 h)"), ""
    yield "loo_error", loo_error_figure(
        points, prefix + "leave-one-out start error, jobs >= 24 h (dashed: 1 h)"), ""
