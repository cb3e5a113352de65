"""Figures of the evaluation, drawn from what ``mirage evaluate`` wrote.

``outcomes`` is outcomes.parquet (one row per sample and policy), ``table`` evaluation.csv
(metrics.summarize per mode), ``sweep`` lead_sweep.csv, ``seeds`` seeds.csv; ``headline`` and
``tradeoff`` are computed from them by the evaluation (mirage.evaluate.headline.headline_points,
mirage.evaluate.metrics.level_tradeoff; mirage.figures.cli does it for ``mirage figures evaluation``).
Every function here takes those frames and returns a figure (None where there is nothing to
draw); ``evaluation_figures`` yields all of them by name, with a note for each one it leaves out.

x = start(successor) - end(predecessor) in hours: > 0 an interruption, < 0 an overlap.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.figures.headline import headline_figure
from mirage.figures.style import (
    COLUMN_W, DOUBLE_W, ROLE_COLORS, legend_below, log_axis, plain_ticks, policy_order,
    policy_style, slug, styled,
)
from mirage.outcomes import ALL, LOAD_LEVELS, OVERLAP_GOAL_H, ZERO_INTERRUPTION_GOAL

X_LABEL = "x = start(successor) − end(predecessor) [h]"
LEVEL_ORDER = LOAD_LEVELS + (ALL,)


def cells(frame: pd.DataFrame):
    """``(key, rows)`` of every evaluation cell in a stable order; ``key`` holds mode and
    chain_nodes, and the cluster where the table holds more than one."""
    keys = ((["cluster"] if "cluster" in frame.columns and frame["cluster"].nunique() > 1 else [])
            + (["mode"] if "mode" in frame.columns else []) + ["chain_nodes"])
    for values, part in frame.groupby(keys, sort=True):
        yield dict(zip(keys, values)), part


def cell_name(kind: str, key: dict) -> str:
    """``<kind>[_<cluster>][_<mode>]_n<nodes>``."""
    parts = [slug(key[k]) for k in ("cluster", "mode") if k in key]
    return "_".join([kind, *parts, f"n{int(key['chain_nodes'])}"])


def cell_title(label: str, key: dict) -> str:
    parts = [str(key["cluster"])] if "cluster" in key else []
    parts += [f"{key['mode']} simulator"] if "mode" in key else []
    return ", ".join(([label] if label else []) + parts + [f"{int(key['chain_nodes'])}-node chains"])


def _levels(frame: pd.DataFrame) -> list[str]:
    """The load levels present, then "all"."""
    return [lvl for lvl in LOAD_LEVELS if (frame["load_level"] == lvl).any()] + [ALL]


def _level_title(level: str) -> str:
    return "all loads" if level == ALL else f"{level} load"


def _level_rows(frame: pd.DataFrame, level: str) -> pd.DataFrame:
    return frame if level == ALL else frame[frame["load_level"] == level]


def _symlog_x(ax, values):
    """x in hours spans minutes to days on both sides of 0: linear within +-1 h, log beyond."""
    import matplotlib.ticker as ticker

    ax.set_xscale("symlog", linthresh=1.0, linscale=0.6)
    lo, hi = (np.nanmin(values), np.nanmax(values)) if len(values) else (-1.0, 1.0)
    ax.set_xlim(min(lo * 1.3, -1.0), max(hi * 1.3, 1.0))
    ax.xaxis.set_major_locator(ticker.SymmetricalLogLocator(base=10, linthresh=1.0))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    plain_ticks(ax.xaxis)
    ax.axvline(0, color="grey", lw=0.7, ls=":", zorder=1)


# ------------------------------------------------------------------------------ x per sample
@styled
def x_cdf_figure(out: pd.DataFrame, title: str = ""):
    """CDF of x, one curve per policy, one panel per load level and "all" (the paper's figure).
    ``out``: one cell's outcomes."""
    import matplotlib.pyplot as plt

    policies = policy_order(out["policy"])
    levels = _levels(out)
    fig, axes = plt.subplots(1, len(levels), figsize=(DOUBLE_W, 2.5 + 0.12 * len(policies)),
                             sharey=True, squeeze=False)
    for ax, lvl in zip(axes[0], levels):
        d = _level_rows(out, lvl)
        for p in policies:
            x = np.sort(d.loc[d["policy"] == p, "x_h"].to_numpy(dtype=float))
            if len(x):
                st = policy_style(p)
                ax.step(np.r_[x[0], x], np.r_[0.0, np.arange(1, len(x) + 1) / len(x)],
                        where="post", color=st["color"], ls=st["ls"], lw=st["lw"], label=p)
        _symlog_x(ax, d["x_h"].to_numpy(dtype=float))
        ax.set_title(f"{_level_title(lvl)} (n={d['sample_id'].nunique()})")
        ax.set_xlabel("x [h]")
    axes[0, 0].set_ylabel("share of samples")
    axes[0, 0].set_ylim(0, 1.02)
    legend_below(fig, axes, ncols=5)
    fig.suptitle(f"{title}\n{X_LABEL}" if title else X_LABEL)
    return fig


@styled
def x_box_figure(out: pd.DataFrame, title: str = ""):
    """Box plots of x per policy (boxes: quartiles; whiskers: 1.5 IQR; white diamonds: means),
    one panel per load level and "all"."""
    import matplotlib.pyplot as plt

    policies = policy_order(out["policy"])
    levels = _levels(out)
    fig, axes = plt.subplots(1, len(levels), figsize=(DOUBLE_W, 1.0 + 0.17 * len(policies)),
                             sharey=True, squeeze=False)
    pos = np.arange(len(policies))
    for ax, lvl in zip(axes[0], levels):
        d = _level_rows(out, lvl)
        data = [d.loc[d["policy"] == p, "x_h"].to_numpy(dtype=float) for p in policies]
        keep = [i for i, v in enumerate(data) if len(v)]
        if keep:
            bp = ax.boxplot([data[i] for i in keep], positions=pos[keep], orientation="horizontal",
                            widths=0.65, patch_artist=True, showmeans=True,
                            medianprops=dict(color="black", lw=0.9),
                            meanprops=dict(marker="D", markerfacecolor="white",
                                           markeredgecolor="black", markersize=3.2, mew=0.6),
                            flierprops=dict(marker=".", markersize=2, alpha=0.5),
                            whiskerprops=dict(lw=0.7), capprops=dict(lw=0.7),
                            boxprops=dict(lw=0.7))
            for patch, i in zip(bp["boxes"], keep):
                patch.set_facecolor(policy_style(policies[i])["color"])
                patch.set_alpha(0.85)
        _symlog_x(ax, d["x_h"].to_numpy(dtype=float))
        ax.set_title(f"{_level_title(lvl)} (n={d['sample_id'].nunique()})")
        ax.set_xlabel("x [h]")
        ax.grid(False, axis="y")
    axes[0, 0].set_yticks(pos, policies)
    axes[0, 0].set_ylim(len(policies) - 0.4, -0.6)  # the evaluation's first policy on top
    fig.suptitle((f"{title}\n" if title else "") + f"{X_LABEL}; ◇ mean")
    return fig


# ------------------------------------------------------------------------------ metric bars
def _bar_grid(table: pd.DataFrame, rows: list[dict], title: str):
    """Horizontal bars, one per policy; one column per load level and "all", one row per
    metric. Each row: {"values": Series aligned with ``table``, "label", optional "lines":
    [(x, text)], "log": bool}."""
    import matplotlib.pyplot as plt

    policies = policy_order(table["policy"])
    levels = [lvl for lvl in LEVEL_ORDER if (table["load_level"] == lvl).any()]
    fig, axes = plt.subplots(len(rows), len(levels), squeeze=False, sharey=True,
                             figsize=(DOUBLE_W, len(rows) * (0.75 + 0.15 * len(policies)) + 0.5))
    pos = np.arange(len(policies))
    for i, row in enumerate(rows):
        vals = row["values"]
        finite = vals[np.isfinite(vals)]
        for j, lvl in enumerate(levels):
            ax = axes[i, j]
            d = table[table["load_level"] == lvl]
            v = vals[d.index].groupby(d["policy"]).first().reindex(policies)
            colors = [policy_style(p)["color"] for p in policies]
            ok = np.isfinite(v.to_numpy(dtype=float))
            # a ratio on log axes: bars grow from 1 (the reference), not from an absent 0
            base = 1.0 if row.get("log") else 0.0
            ax.barh(pos[ok], v.to_numpy(dtype=float)[ok] - base, left=base,
                    color=np.array(colors)[ok], height=0.72)
            for k in np.flatnonzero(~ok):
                ax.text(0.02, pos[k], "n/a", transform=ax.get_yaxis_transform(), va="center",
                        fontsize=6, color="dimgrey")
            for x, _ in row.get("lines", ()):
                ax.axvline(x, color="dimgrey", lw=0.8, ls="--", zorder=3)
            if row.get("log"):
                log_axis(ax, "x")
                if len(finite):
                    ax.set_xlim(min(0.9, finite.min() / 1.2), max(1.5, finite.max() * 1.3))
            elif len(finite):
                lo, hi = min(0.0, finite.min()), max(0.0, finite.max())
                pad = 0.05 * (hi - lo or 1.0)
                ax.set_xlim(lo - (pad if lo < 0 else 0), hi + pad)
            ax.set_xlabel(row["label"])
            ax.grid(False, axis="y")
            if i == 0:
                n = d["n"].max() if "n" in d.columns else np.nan
                ax.set_title(_level_title(lvl) + (f" (n={int(n)})" if np.isfinite(n) else ""))
    axes[0, 0].set_yticks(pos, policies)
    axes[0, 0].set_ylim(len(policies) - 0.4, -0.6)
    said = [text for row in rows for _, text in row.get("lines", ()) if text]
    fig.suptitle("\n".join(t for t in (title, f"dashed: {'; '.join(said)}" if said else "") if t))
    return fig


@styled
def zero_interruption_figure(table: pd.DataFrame, title: str = ""):
    """Share of samples without interruption (x <= 0) and mean overlap per policy and level;
    ``table``: one cell's rows of evaluation.csv."""
    table = table.reset_index(drop=True)
    return _bar_grid(table, [
        {"values": table["zero_interruption_share"] * 100, "label": "no interruption [%]",
         "lines": [(ZERO_INTERRUPTION_GOAL * 100,
                    f"goal >= {ZERO_INTERRUPTION_GOAL:.0%} without interruption")]},
        {"values": table["mean_overlap_h"], "label": "mean overlap [h]",
         "lines": [(OVERLAP_GOAL_H, f"goal < {OVERLAP_GOAL_H:g} h mean overlap")]},
    ], title)


@styled
def cost_vs_oracle_figure(table: pd.DataFrame, title: str = ""):
    """Mean cost over the oracle's (the cheapest point of every sample, known in hindsight)
    and the difference in hours. The oracle's mean cost is cost - oracle_gap of any row, so
    this needs no oracle among the policies. None where no level has a positive oracle cost."""
    table = table.reset_index(drop=True)
    oracle = table["cost"] - table["oracle_gap"]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (table["cost"] / oracle).where(oracle > 1e-12)
    if not np.isfinite(ratio).any():
        return None
    return _bar_grid(table, [
        {"values": ratio, "label": "cost / oracle's", "log": True, "lines": [(1.0, "the oracle")]},
        {"values": table["oracle_gap"], "label": "cost − oracle's [h]", "lines": [(0.0, "")]},
    ], title)


@styled
def interruption_reduction_figure(table: pd.DataFrame, title: str = ""):
    """The paper's headline: 1 - mean interruption / the reactive policy's (resubmitting when
    the predecessor ends), in %. The reactive reference comes from every sample's last point,
    so it needs no reactive among the policies. None where the reactive policy is never
    interrupted (the reduction is undefined)."""
    table = table.reset_index(drop=True)
    vals = table["interruption_reduction_pct"].astype(float)
    if not np.isfinite(vals).any():
        return None
    title = "\n".join(t for t in (title, "interruption reduction: 1 − mean interruption / the "
                                         "reactive policy's") if t)
    return _bar_grid(table, [{"values": vals, "label": "reduction [%]",
                              "lines": [(0.0, "as reactive"), (100.0, "no interruption left")]}],
                     title)


# ------------------------------------------------------------------------------ trade-off
@styled
def level_tradeoff_figure(wide: pd.DataFrame, policies=None, title: str = ""):
    """Cost at one load level against the next (low vs medium, medium vs heavy), one panel per
    (mode, chain size), one point per policy. ``wide``: mirage.evaluate.metrics.level_tradeoff
    of an evaluation table; ``policies``: the legend's order (default: ``wide``'s). The shaded
    corner is where a policy beats every baseline at both levels; baselines are squares, the
    oracle a star. None when no group has two load levels."""
    import matplotlib.pyplot as plt
    import matplotlib.ticker as ticker

    levels = [lvl for lvl in LOAD_LEVELS if lvl in wide.columns]
    pairs = list(zip(levels, levels[1:]))
    keys = [k for k in ("cluster", "mode", "chain_nodes") if k in wide.columns]
    groups = [(key, g) for key, g in wide.groupby(keys, sort=True)
              if any(g[a].notna().any() and g[b].notna().any() for a, b in pairs)]
    if not groups:
        return None
    policies = policy_order(wide["policy"] if policies is None else policies)
    ncols = min(len(groups), 3)
    nrows = len(pairs) * -(-len(groups) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False,
                             figsize=(DOUBLE_W if ncols > 1 else COLUMN_W + 1.2, 2.5 * nrows + 0.9))
    for ax in axes.flat:
        ax.set_axis_off()
    for n, (key, g) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        for i, (a, b) in enumerate(pairs):
            ax = axes[(n // ncols) * len(pairs) + i, n % ncols]
            d = g.dropna(subset=[a, b]).copy()
            if d.empty:
                continue
            ax.set_axis_on()
            # log axes cannot show a zero cost (every handover of the level seamless):
            # such a point sits on the lower edge instead of vanishing
            positive = d[[a, b]].to_numpy()
            positive = positive[positive > 0]
            edge = positive.min() / 2 if len(positive) else 1e-3
            d[[a, b]] = d[[a, b]].clip(lower=edge)
            base = d[d["baseline"]]
            if len(base):
                floor = min(d[a].min(), d[b].min()) / 10  # below the axes' lower limits
                ax.fill_between([floor, base[a].min()], floor, base[b].min(),
                                color="tab:green", alpha=0.12, lw=0,
                                label="beats every baseline at both")
            for _, r in d.iterrows():
                st = policy_style(r["policy"])
                marker = "*" if r["policy"] == "oracle" else "s" if r["baseline"] else st["marker"]
                ax.scatter(r[a], r[b], marker=marker, s=70 if marker == "*" else 26,
                           color=st["color"], edgecolor="black", lw=0.4, zorder=3,
                           label=r["policy"])
            ax.set_xscale("log")
            ax.set_yscale("log")
            for axis, col in ((ax.xaxis, a), (ax.yaxis, b)):
                # 1-2-5 steps where a panel spans little more than a decade
                narrow = d[col].max() / d[col].min() < 30
                axis.set_major_locator(ticker.LogLocator(
                    base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
                plain_ticks(axis)
            ax.set_xlim(d[a].min() / 1.5, d[a].max() * 1.5)
            ax.set_ylim(d[b].min() / 1.5, d[b].max() * 1.5)
            _name_shared_points(ax, d, a, b)
            ax.set_xlabel(f"mean cost at {a} load [h]")
            ax.set_ylabel(f"mean cost at {b} load [h]")
            ax.set_title(", ".join(f"{k} node{'s' if k != 1 else ''}" if c == "chain_nodes"
                                   else str(k) for c, k in zip(keys, key)))
    # one legend for the figure: every policy once, in the table's order
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    order = ([lab for lab in handles if lab not in policies]
             + [p for p in policies if p in handles])
    fig.legend([handles[lab] for lab in order], order, loc="outside lower center",
               ncols=min(5, len(order)))
    fig.suptitle(title or "Cost at one load level against the next")
    return fig


def _name_shared_points(ax, d: pd.DataFrame, a: str, b: str) -> None:
    """Policies with the same outcomes (e.g. the ones that stay reactive) share a point: name
    them together rather than letting the last one drawn hide the others, each list below the
    one above it where two would overlap."""
    same = d.groupby([d[a].round(6), d[b].round(6)])["policy"].agg(list)
    to_axes = ax.transData + ax.transAxes.inverted()
    placed = []  # (x, bottom) of the lists written so far, axes fraction
    for (xa, yb), names in sorted(same.items(), key=lambda kv: -kv[0][1]):
        if len(names) < 2:
            continue
        text = "\n".join(" = ".join(names[i:i + 3]) for i in range(0, len(names), 3))
        fx, fy = to_axes.transform((xa, yb))
        top = fy - 0.03
        for px, bottom in placed:
            if abs(px - fx) < 0.4:
                top = min(top, bottom - 0.01)
        # where the list would run past the right edge it goes to the point's left
        # (a 5 pt character is about 2.8 pt wide)
        width = 2.8 * max(map(len, text.split("\n"))) / (
            ax.get_position().width * ax.figure.get_figwidth() * 72)
        right = fx + 0.02 + width > 1.0 and fx > 0.5
        ann = ax.annotate(text, (xa, yb), xytext=(fx - 0.02 if right else fx + 0.02, top),
                          textcoords="axes fraction", fontsize=5, va="top",
                          ha="right" if right else "left", color="dimgrey", clip_on=True)
        ann.set_in_layout(False)  # a long list must not squeeze the panels
        placed.append((fx, top - 0.045 * (text.count("\n") + 1)))


# ------------------------------------------------------------------------------ lead sweep
@styled
def lead_sweep_figure(sweep: pd.DataFrame, title: str = ""):
    """Mean cost, interruption and overlap against the fixed lead, solid on the training
    samples, dashed on the validation ones, one panel per lead policy (fixed_lead,
    plan_lead), the fitted lead marked. ``sweep``: one cell's rows of lead_sweep.csv."""
    import matplotlib.pyplot as plt

    pols = policy_order(sweep["policy"])
    fig, axes = plt.subplots(1, len(pols), squeeze=False, sharey=True,
                             figsize=(DOUBLE_W if len(pols) > 1 else COLUMN_W + 0.6, 2.9))
    styles = {"train": "-", "validation": "--"}
    for ax, pol in zip(axes[0], pols):
        d = sweep[sweep["policy"] == pol]
        for split, sd in d.groupby("split", sort=False):
            sd = sd.sort_values("lead_h")
            ls = styles.get(split, ":")
            for col, role, what in (("cost", "cost", "cost"),
                                    ("mean_interruption_h", "interruption", "interruption"),
                                    ("mean_overlap_h", "overlap", "overlap")):
                ax.plot(sd["lead_h"], sd[col], ls=ls, color=ROLE_COLORS[role], lw=1.2,
                        label=f"{what}, {split}")
        chosen = d["chosen_lead_h"].dropna()
        if len(chosen):
            ax.axvline(chosen.iloc[0], color=policy_style(pol)["color"], lw=1.0)
            ax.annotate(f"fitted {chosen.iloc[0]:.3g} h", (chosen.iloc[0], 1.0),
                        xycoords=("data", "axes fraction"), xytext=(3, -10),
                        textcoords="offset points", fontsize=6.5)
        ax.set_title(pol)
        ax.set_xlabel("lead L [h] (submit when <= L h are left)")
    axes[0, 0].set_ylabel("mean per sample [h]")
    legend_below(fig, axes, ncols=3)
    if title:
        fig.suptitle(title)
    return fig


@styled
def seed_spread_figure(spread: pd.DataFrame, table: pd.DataFrame | None = None, title: str = "",
                       baselines=()):
    """Mean cost of every policy fitted with several training seeds: each seed's value as a
    dot, the mean with its t interval over seeds as a bar (the range with fewer than 3 seeds),
    one panel per load level, and the cheapest of the ``baselines`` in the cell (from
    ``table``, evaluation.csv) as a dashed line.
    ``spread``: one cell's rows of seeds.csv; None when it has no cost rows."""
    import matplotlib.pyplot as plt

    spread = spread[spread["metric"] == "cost"]
    if spread.empty:
        return None
    levels = [lvl for lvl in LEVEL_ORDER if (spread["load_level"] == lvl).any()]
    names = policy_order(spread["policy"])
    fig, axes = plt.subplots(1, len(levels), squeeze=False, sharey=False,
                             figsize=(min(DOUBLE_W, max(5.2, 1.2 + 1.45 * len(levels))), 2.8))
    for ax, level in zip(axes[0], levels):
        rows = spread[spread["load_level"] == level].set_index("policy")
        top = 0.0
        for i, name in enumerate(names):
            if name not in rows.index:
                continue
            r = rows.loc[name]
            vals = np.array([float(v) for v in str(r["values"]).split()])
            color = policy_style(name)["color"]
            jitter = np.linspace(-0.12, 0.12, len(vals)) if len(vals) > 1 else np.zeros(1)
            ax.scatter(i + jitter, vals, s=9, color=color, alpha=0.75, lw=0, zorder=3)
            # the t interval of two seeds is 12.7 standard errors wide: their range says more
            lo, hi = ((r["ci_low"], r["ci_high"]) if len(vals) >= 3 and np.isfinite(r["ci_low"])
                      else (vals.min(), vals.max()))
            # (the values of seeds.csv carry 4 digits: clip their rounding)
            ax.errorbar(i, r["mean"], yerr=[[max(r["mean"] - lo, 0.0)], [max(hi - r["mean"], 0.0)]],
                        fmt="_", ms=10,
                        color=color, capsize=2.5, lw=1.1, zorder=4)
            top = max(top, float(np.nanmax(vals)))
        if table is not None and "policy" in table.columns:
            base = table[(table["load_level"] == level) & table["policy"].isin(baselines)]
            if len(base):
                best = base.loc[base["cost"].idxmin()]
                ax.axhline(best["cost"], color=policy_style(best["policy"])["color"], ls="--",
                           lw=0.9, label="cheapest baseline")
                ax.annotate(best["policy"], (len(names) - 0.5, best["cost"]), fontsize=6,
                            ha="right", va="bottom", color="0.3")
                top = max(top, float(best["cost"]))
        ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_title(_level_title(level))
        ax.set_ylim(0, 1.35 * top if top > 0 else 1.0)  # a wide interval runs off the top
    axes[0, 0].set_ylabel("mean cost per sample [h]")
    seeds = int(spread["seeds"].max())
    bar = "95 % t interval" if seeds >= 3 else "range"
    fig.suptitle((title + "\n" if title else "") + f"{seeds} training seeds (dots): mean and {bar}",
                 fontsize="medium")
    legend_below(fig, axes, ncols=2)
    return fig


# ------------------------------------------------------------------------------ all of them
#: what a figure of a cell needs from evaluation.csv, and why it may have nothing to show
_TABLE_FIGURES = {
    "zero_interruption": (zero_interruption_figure, ["zero_interruption_share", "mean_overlap_h"],
                          ""),
    "cost_vs_oracle": (cost_vs_oracle_figure, ["cost", "oracle_gap"],
                       "the oracle's mean cost is 0 at every load level (no ratio)"),
    "interruption_reduction": (interruption_reduction_figure, ["interruption_reduction_pct"],
                               "the reactive policy is never interrupted here (the reduction "
                               "is undefined)"),
}


def evaluation_figures(outcomes: pd.DataFrame, table: pd.DataFrame, *, headline: pd.DataFrame,
                       tradeoff: pd.DataFrame, baselines, sweep: pd.DataFrame | None = None,
                       label: str = "", seeds: pd.DataFrame | None = None):
    """Every evaluation figure, one at a time: yields ``(name, figure, note)``, the figure None
    (and the note saying why) where there is nothing to draw. ``headline``: headline_points of
    ``outcomes``; ``tradeoff``: level_tradeoff of ``table``; ``baselines``: the baselines' names
    (the seeds figures mark the cheapest).

    Per mode: headline_<mode> (interruption against overlap of every policy, the ones a
    reader asks about named; mirage.figures.headline). Per (mode, chain size): x_cdf_, x_box_, zero_interruption_, cost_vs_oracle_,
    interruption_reduction_, lead_sweep_, seeds_<mode>_n<nodes> (with the cluster after the
    kind where the tables hold several; seeds_ where ``seeds``, seeds.csv, has rows); per
    cluster: level_tradeoff_<cluster>.
    """
    modes = headline.groupby("mode", sort=True) if "mode" in headline.columns else [("", headline)]
    for mode, part in modes:
        title = ", ".join(t for t in (label, f"{mode} simulator" if mode else "") if t)
        yield ("headline" + (f"_{slug(mode)}" if mode else ""),
               headline_figure(part, f"{title}: interruption against overlap, lower left is "
                                     "better"), "")
    for key, part in cells(outcomes):
        title = cell_title(label, key)
        yield cell_name("x_cdf", key), x_cdf_figure(part, title), ""
        yield cell_name("x_box", key), x_box_figure(part, title), ""
    for key, part in cells(table):
        title = cell_title(label, key)
        for kind, (draw, cols, why) in _TABLE_FIGURES.items():
            missing = [c for c in cols if c not in part.columns]
            if missing:
                yield cell_name(kind, key), None, f"the evaluation table lacks {', '.join(missing)}"
            else:
                yield cell_name(kind, key), draw(part, title), why
    groups = table.groupby("cluster", sort=True) if "cluster" in table.columns else [("", table)]
    for cluster, part in groups:
        title = f"{label or cluster}: cost at one load level against the next"
        wide = tradeoff[tradeoff["cluster"] == cluster] if cluster else tradeoff
        yield ("level_tradeoff" + (f"_{slug(cluster)}" if cluster else ""),
               level_tradeoff_figure(wide, policy_order(part["policy"]), title=title),
               "no (mode, chain size) has samples at two load levels")
    if seeds is None or seeds.empty:
        yield "seeds", None, "every policy was fitted with one training seed"
    else:
        for key, part in cells(seeds):
            rows = table
            for k, v in key.items():
                rows = rows[rows[k] == v]
            yield cell_name("seeds", key), seed_spread_figure(part, rows, cell_title(label, key),
                                                              baselines), ""
    if sweep is None or sweep.empty:
        yield "lead_sweep", None, "no lead sweep (no fixed_lead or plan_lead was evaluated)"
        return
    for key, part in cells(sweep):
        title = cell_title(label, key) + ": cost against the fixed lead"
        yield cell_name("lead_sweep", key), lead_sweep_figure(part, title), ""
