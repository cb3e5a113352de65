"""Figures of the evaluation: x distributions per cluster and load level, cost vs lead."""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # workflow and CI nodes have no display
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from mirage.evaluate.metrics import ALL, LOAD_LEVELS  # noqa: E402


def plot_x_distributions(out: pd.DataFrame, out_dir, fmt: str = "png") -> list[Path]:
    """One figure per cluster: CDFs (top) and box plots (bottom) of x, one column per load
    level plus "all", one curve/box per policy (the reference's figure layout)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    policies = list(out["policy"].unique())
    # tab10 repeats its colours after ten policies; tab20 keeps eleven or more apart
    palette = dict(zip(policies, sns.color_palette("tab10" if len(policies) <= 10 else "tab20", len(policies))))
    paths = []
    for cluster, cd in out.groupby("cluster", sort=True):
        levels = [lvl for lvl in LOAD_LEVELS if (cd["load_level"] == lvl).any()] + [ALL]
        fig, axes = plt.subplots(2, len(levels), figsize=(4.2 * len(levels), 7.5),
                                 squeeze=False)
        for j, lvl in enumerate(levels):
            d = cd if lvl == ALL else cd[cd["load_level"] == lvl]
            n = d["sample_id"].nunique()
            ax = axes[0, j]
            for p in policies:
                x = np.sort(d.loc[d["policy"] == p, "x_h"].to_numpy())
                if len(x):
                    ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post",
                            color=palette[p], label=p)
            ax.axvline(0, color="grey", lw=0.8, ls=":")
            ax.set_title(f"{cluster}: {lvl} load (n={n})")
            ax.set_xlabel("x = start(successor) - end(predecessor) [h]")
            ax.set_ylabel("CDF")
            ax = axes[1, j]
            with warnings.catch_warnings():
                # seaborn 0.13 still passes matplotlib's deprecated vert= to bxp
                warnings.simplefilter("ignore", category=DeprecationWarning)
                warnings.simplefilter("ignore", category=PendingDeprecationWarning)
                try:
                    from matplotlib import MatplotlibDeprecationWarning as _MDW
                    warnings.simplefilter("ignore", category=_MDW)
                except ImportError:  # pragma: no cover
                    pass
                sns.boxplot(data=d, x="policy", y="x_h", hue="policy", order=policies,
                            palette=palette, ax=ax, fliersize=2, legend=False)
            ax.axhline(0, color="grey", lw=0.8, ls=":")
            ax.set_ylabel("x [h]")
            ax.set_xlabel("")
            ax.tick_params(axis="x", rotation=60)
        axes[0, 0].legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        path = out_dir / f"x_{cluster}.{fmt}"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_lead_sweep(sweeps: dict[str, pd.DataFrame], path, chosen_lead_h: float | None = None
                    ) -> Path:
    """Mean cost, interruption and overlap against the fixed lead, one line style per data
    split (e.g. {"train": ..., "validation": ...} from baselines.lead_sweep)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = ["-", "--", ":", "-."]
    for (label, sw), ls in zip(sweeps.items(), styles):
        ax.plot(sw["lead_h"], sw["cost"], ls, color="black", label=f"cost ({label})")
        ax.plot(sw["lead_h"], sw["mean_interruption_h"], ls, color="tab:red",
                label=f"interruption h ({label})")
        ax.plot(sw["lead_h"], sw["mean_overlap_h"], ls, color="tab:blue",
                label=f"overlap h ({label})")
    if chosen_lead_h is not None:
        ax.axvline(chosen_lead_h, color="grey", lw=0.8, label=f"tuned lead {chosen_lead_h:g} h")
    ax.set_xlabel("fixed lead L [h] (submit when the predecessor has <= L h left)")
    ax.set_ylabel("mean per sample [h]")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def level_tradeoff(table: pd.DataFrame, baselines=None) -> pd.DataFrame:
    """Every policy's mean cost at each load level side by side, one row per (cluster, mode,
    chain size, policy), with ``beats_<level>``: cheaper than every baseline at that level,
    and ``beats_all_levels``.

    The goal "beat every baseline at every load level" asks one policy to win cells whose
    level is known only in hindsight; this table (and plot_level_tradeoff) shows whether any
    single policy does, and how far each is from doing so. A level without samples in a
    group counts for every policy; a group without baselines has no winner.
    """
    if baselines is None:
        from mirage.report import BASELINES as baselines
    keys = [k for k in ("cluster", "mode", "chain_nodes") if k in table.columns]
    per = table[table["load_level"] != ALL]
    wide = per.pivot_table(index=keys + ["policy"], columns="load_level", values="cost")
    levels = [lvl for lvl in LOAD_LEVELS if lvl in wide.columns]
    wide = wide[levels].reset_index()
    wide.columns.name = None
    wide["baseline"] = wide["policy"].isin(baselines)
    best_base = (wide[wide["baseline"]].groupby(keys)[levels].min()
                 .rename(columns=lambda lvl: f"_ref_{lvl}").reset_index())
    ref = wide[keys].merge(best_base, on=keys, how="left")  # keeps wide's row order
    has_base = wide[keys].merge(best_base[keys].assign(_has=1), on=keys, how="left")[
        "_has"].notna().to_numpy()
    for lvl in levels:
        mine, theirs = wide[lvl].to_numpy(dtype=float), ref[f"_ref_{lvl}"].to_numpy(dtype=float)
        absent = np.isnan(mine) & np.isnan(theirs)  # the group has no sample of this level
        with np.errstate(invalid="ignore"):
            wide[f"beats_{lvl}"] = has_base & ((mine < theirs) | absent)
    wide["beats_all_levels"] = wide[[f"beats_{lvl}" for lvl in levels]].all(axis=1)
    return wide


def plot_level_tradeoff(table: pd.DataFrame, path, baselines=None) -> Path | None:
    """Cost at one load level against the next (low vs medium, medium vs heavy), one panel per
    (mode, chain size), one point per policy. The shaded corner is where a policy beats every
    baseline at both levels; baselines are squares, the oracle a star. None when no group has
    two load levels."""
    if baselines is None:
        from mirage.report import BASELINES as baselines
    wide = level_tradeoff(table, baselines)
    levels = [lvl for lvl in LOAD_LEVELS if lvl in wide.columns]
    pairs = list(zip(levels, levels[1:]))
    keys = [k for k in ("cluster", "mode", "chain_nodes") if k in wide.columns]
    groups = [(key, g) for key, g in wide.groupby(keys, sort=True)
              if any(g[a].notna().any() and g[b].notna().any() for a, b in pairs)]
    if not groups:
        return None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    policies = list(dict.fromkeys(table["policy"]))  # the evaluation's order
    palette = dict(zip(policies, sns.color_palette("tab20", len(policies))))
    fig, axes = plt.subplots(len(pairs), len(groups), figsize=(4.6 * len(groups),
                             4.4 * len(pairs)), squeeze=False)
    for j, (key, g) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        for i, (a, b) in enumerate(pairs):
            ax = axes[i, j]
            d = g.dropna(subset=[a, b]).copy()
            if d.empty:
                ax.set_axis_off()
                continue
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
            # policies with the same outcomes (e.g. the ones that stay reactive) share a point:
            # name them together rather than letting the last one hide the others
            same = d.groupby([d[a].round(6), d[b].round(6)])["policy"].agg(list)
            for (xa, yb), names in same.items():
                if len(names) > 1:
                    ax.annotate(" = ".join(names), (xa, yb), fontsize=6, xytext=(4, -9),
                                textcoords="offset points", color="dimgrey")
            for _, r in d.iterrows():
                marker = "*" if r["policy"] == "oracle" else "s" if r["baseline"] else "o"
                ax.scatter(r[a], r[b], marker=marker, s=110 if marker == "*" else 50,
                           color=palette[r["policy"]], edgecolor="black", lw=0.5, zorder=3,
                           label=r["policy"])
            ax.set_xscale("log")
            ax.set_yscale("log")
            for axis, col in ((ax.xaxis, a), (ax.yaxis, b)):
                # 1-2-5 steps where a panel spans little more than a decade
                narrow = d[col].max() / d[col].min() < 30
                axis.set_major_locator(ticker.LogLocator(
                    base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
                axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
                axis.set_minor_formatter(ticker.NullFormatter())
            ax.set_xlim(d[a].min() / 1.5, d[a].max() * 1.5)
            ax.set_ylim(d[b].min() / 1.5, d[b].max() * 1.5)
            ax.set_xlabel(f"mean cost at {a} load [h]")
            ax.set_ylabel(f"mean cost at {b} load [h]")
            ax.set_title(", ".join(f"{k} node{'s' if k != 1 else ''}" if n == "chain_nodes"
                                   else str(k) for n, k in zip(keys, key)), fontsize=10)
            ax.grid(True, which="major", lw=0.3, alpha=0.5)
    # one legend for the figure: every policy once, in the table's order
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    order = [lab for lab in handles if lab not in palette] + [p for p in policies if p in handles]
    fig.legend([handles[lab] for lab in order], order, loc="center left",
               bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
