"""The headline figure: what each kind of provisioner costs on one cluster, interruption
against overlap per handover, one panel per chain size.

Every policy of the run is a point at its mean overlap (x) and mean interruption (y) over the
validation samples, with 95 % bootstrap intervals (percentile, over samples) on both; the
ones a reader asks about are named in the legend (with the others they coincide with):
reactive resubmission, the best baseline, the paper's
method (REINFORCE, ``pg``), the best learned policy (by mean cost on these samples, so
optimistic) and the oracle, which knows the future. Grey lines are the cost contours
(interruption + c_O x overlap). Lower left is better.

The points, their intervals and the roles are computed by mirage.evaluate.headline
(``headline_points``); this module only draws them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.figures.style import DOUBLE_W, policy_style, styled


def _coincident(means: pd.DataFrame, roles: dict[str, str]) -> dict[str, str]:
    """Named policies drawn on the very same point as another named one (REINFORCE that stays
    reactive): policy -> the others it hides, for its legend entry."""
    at = means.set_index("policy")[["overlap_h", "interruption_h"]]
    out = {}
    for p in roles:
        others = [q for q in roles if q != p and np.allclose(at.loc[p], at.loc[q])]
        if others:
            out[p] = " = ".join(others)
    return out


def _roles(means: pd.DataFrame) -> dict[str, str]:
    """policy -> role of the named policies of one panel, in the legend's order."""
    named = means[means["role_rank"] >= 0].sort_values("role_rank")
    return dict(zip(named["policy"], named["role"]))


@styled
def headline_figure(points: pd.DataFrame, title: str = "", c_O: float = 0.5):
    """One panel per chain size of ``points`` (mirage.evaluate.headline.headline_points of one
    cluster's outcomes in one simulator mode)."""
    import matplotlib.pyplot as plt

    sizes = sorted(points["chain_nodes"].unique())
    fig, axes = plt.subplots(1, len(sizes), figsize=(DOUBLE_W, 3.4), squeeze=False)
    for ax, nodes in zip(axes[0], sizes):
        means = points[points["chain_nodes"] == nodes]
        roles = _roles(means)
        top = max(means["interruption_h_high"].max(), 0.1) * 1.1
        right = max(means["overlap_h_high"].max(), 0.1) * 1.1
        for level in np.linspace(0, top + c_O * right, 7)[1:]:
            xs = np.array([0, right])
            ax.plot(xs, level - c_O * xs, color="0.85", lw=0.6, zorder=0)
        same = _coincident(means, roles)
        for _, r in means.iterrows():
            named = r["policy"] in roles
            style = policy_style(r["policy"])
            label = None
            if named:
                label = r["policy"] + ("" if roles[r["policy"]] == r["policy"]
                                       else f" ({roles[r['policy']]})")
                if r["policy"] in same:
                    label += f" = {same[r['policy']]}"
            ax.errorbar(r["overlap_h"], r["interruption_h"],
                        xerr=[[r["overlap_h"] - r["overlap_h_low"]],
                              [r["overlap_h_high"] - r["overlap_h"]]],
                        yerr=[[r["interruption_h"] - r["interruption_h_low"]],
                              [r["interruption_h_high"] - r["interruption_h"]]],
                        fmt=style["marker"], ms=7 if named else 3.5,
                        color=style["color"] if named else "0.7", elinewidth=0.8 if named else 0.5,
                        capsize=1.5, alpha=1.0 if named else 0.6, zorder=3 if named else 2,
                        label=label)
        handles, labels = ax.get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: list(roles).index(labels[i].split()[0]))
        ax.legend([handles[i] for i in order], [labels[i] for i in order], loc="upper right",
                  fontsize=6.5, frameon=True, framealpha=0.85)
        ax.set_xlim(0, right)
        ax.set_ylim(0, top)
        ax.set_xlabel("mean overlap per handover [h]")
        ax.set_ylabel("mean interruption per handover [h]")
        n = int(means["samples"].iloc[0])
        ax.set_title(f"{int(nodes)}-node chains, {n} validation samples")
    if title:
        fig.suptitle(title)
    return fig
