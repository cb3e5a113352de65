"""Figures of the evaluation: x distributions per cluster and load level, cost vs lead."""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # workflow and CI nodes have no display
import matplotlib.pyplot as plt  # noqa: E402
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
