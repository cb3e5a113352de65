"""Learning curves of the reinforcement-learning policies (`mirage curves`): held-out cost
against environment steps, the mean over training seeds with their range, beside reactive's and
the oracle's cost on the same held-out samples, and each curve's plateau
(mirage.evaluate.curves; the figure only draws what that module computed)."""

from __future__ import annotations

import pandas as pd

from mirage.figures.style import DOUBLE_W, legend_below, policy_color, styled

CURVE_FILE = "curves.csv"


@styled
def curves_figure(means: pd.DataFrame, flats: pd.DataFrame, title: str = ""):
    """One panel per simulator mode and chain size; one line per policy (``means``: mode,
    chain_nodes, policy, env_steps, held_out_cost, low, high, reactive_cost, oracle_cost;
    ``flats``: mode, chain_nodes, policy, plateau_steps, converged)."""
    import matplotlib.pyplot as plt

    panels = list(means.groupby(["mode", "chain_nodes"], sort=True).groups)
    fig, axes = plt.subplots(1, len(panels), squeeze=False, sharey=False,
                             figsize=(min(DOUBLE_W, 2.6 * len(panels) + 0.6), 2.8))
    for ax, (mode, nodes) in zip(axes[0], panels):
        panel = means[(means["mode"] == mode) & (means["chain_nodes"] == nodes)]
        for policy, g in panel.groupby("policy", sort=False):
            color = policy_color(policy)
            ax.plot(g["env_steps"], g["held_out_cost"], color=color, lw=1.3, label=policy)
            ax.fill_between(g["env_steps"], g["low"], g["high"], color=color, alpha=0.18, lw=0)
            flat = flats[(flats["mode"] == mode) & (flats["chain_nodes"] == nodes)
                         & (flats["policy"] == policy)]
            for row in flat.itertuples():
                ax.axvline(row.plateau_steps, color=color, lw=0.8,
                           ls="-" if row.converged else ":", ymax=0.08)
        ref = panel.iloc[0]
        ax.axhline(ref["reactive_cost"], color="0.35", ls="--", lw=0.9, label="reactive")
        ax.axhline(ref["oracle_cost"], color="0.35", ls=":", lw=0.9, label="oracle")
        # an untrained net may submit at once (costs of days): the axis shows reactive's range
        ax.set_ylim(0, 2.2 * max(ref["reactive_cost"], 1e-3))
        ax.set_title(f"{mode}, {nodes}-node chains", fontsize="small")
        ax.set_xlabel("environment steps")
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 3))
    axes[0][0].set_ylabel("held-out cost per handover [h]")
    handles = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    legend_below(fig, axes, ncols=min(6, len(handles)))
    fig.suptitle(title)
    return fig


def curve_figures(means: pd.DataFrame, flats: pd.DataFrame, label: str = ""):
    """The curves figure, ``curves``: yields ``(name, figure, note)``."""
    if means.empty:
        yield "curves", None, "no learning curve"
        return
    title = f"{label}: learning curves" if label else "learning curves"
    yield "curves", curves_figure(means, flats, title), ""
