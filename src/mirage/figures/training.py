"""Training curves of the policies that learn by trial (DQN, REINFORCE, PPO), drawn from the
``training.csv`` that ``mirage fit`` writes beside their model (the fit's ``history_``).

DQN records ``step, epsilon, mean_episode_cost`` (the mean over the last 200 episodes),
REINFORCE and PPO ``update, mean_episode_cost, entropy`` (PPO also ``env_steps``, ``approx_kl``
and ``clipfrac``), each about 60 times per fit
(mirage.policies.neural.HISTORY_POINTS).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from mirage.figures.style import DOUBLE_W, legend_below, log_axis, slug, styled

HISTORY_FILE = "training.csv"
#: which models have a training history, by the name of their directory
TRAINED = re.compile(r"(dqn|pg|ppo)(_.*)?")
#: the x and the second quantity of each kind's history
KINDS = {"dqn": ("step", "epsilon", "exploration ε"),
         "pg": ("update", "entropy", "policy entropy"),
         "ppo": ("update", "entropy", "policy entropy")}
MODE_LINES = ("-", (0, (4, 1.5)), (0, (1, 1.2)), (0, (5, 1.5, 1, 1.5)))


def read_histories(models) -> tuple[pd.DataFrame, list[str]]:
    """Every ``training.csv`` under ``DIR/n<nodes>/<dqn*|pg*>/`` of each ``(mode, DIR)``, as
    one table with ``mode, chain_nodes, policy``; and a note for each model without one."""
    frames, notes = [], []
    for mode, directory in models:
        directory = Path(directory)
        if not directory.is_dir():
            notes.append(f"{directory}: no such models directory (mode {mode})")
            continue
        for d in sorted(directory.glob("n*/*")):
            m = re.fullmatch(r"n(\d+)", d.parent.name)
            if not (m and d.is_dir() and TRAINED.fullmatch(d.name)):
                continue
            path = d / HISTORY_FILE
            if not path.is_file():
                notes.append(f"{d}: no {HISTORY_FILE} (the fit recorded no history, or it "
                             "was fitted before mirage fit wrote one)")
                continue
            h = pd.read_csv(path)
            if h.empty:
                notes.append(f"{path}: empty (the fit recorded no history)")
                continue
            frames.append(h.assign(mode=str(mode), chain_nodes=int(m.group(1)), policy=d.name))
    if not frames:
        return pd.DataFrame(columns=["mode", "chain_nodes", "policy"]), notes
    return pd.concat(frames, ignore_index=True), notes


@styled
def training_figure(history: pd.DataFrame, title: str = ""):
    """One policy's curves: mean episode cost (left) and exploration or entropy (right) against
    training progress; one colour per chain size, one line style per simulator mode."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    kind = TRAINED.fullmatch(history["policy"].iloc[0]).group(1)
    x, second, second_label = KINDS[kind]
    nodes = sorted(history["chain_nodes"].unique())
    colors = dict(zip(nodes, sns.color_palette("viridis", len(nodes) + 1)[:len(nodes)]))
    modes = list(dict.fromkeys(history["mode"]))
    lines = {m: MODE_LINES[i % len(MODE_LINES)] for i, m in enumerate(modes)}
    panels = [("mean_episode_cost", "mean episode cost [h]")]
    if second in history.columns:
        panels.append((second, second_label))
    fig, axes = plt.subplots(1, len(panels), squeeze=False,
                             figsize=(DOUBLE_W if len(panels) > 1 else DOUBLE_W / 2 + 0.3, 2.7))
    for (mode, n), g in history.groupby(["mode", "chain_nodes"], sort=False):
        g = g.sort_values(x)
        for ax, (col, _) in zip(axes[0], panels):
            if col in g.columns:
                ax.plot(g[x], g[col], color=colors[n], ls=lines[mode], lw=1.2,
                        marker="o" if len(g) < 25 else None, ms=2.5,
                        label=f"{n}-node chains" + (f", {mode}" if len(modes) > 1 else ""))
    for ax, (col, label) in zip(axes[0], panels):
        ax.set_xlabel(f"training {x}")
        ax.set_ylabel(label)
        if col == "mean_episode_cost":
            finite = history[col].to_numpy(float)
            finite = finite[np.isfinite(finite)]
            if len(finite) and finite.min() > 0 and finite.max() / finite.min() > 30:
                log_axis(ax, "y")
    legend_below(fig, axes, ncols=4)
    what = ("episode cost: mean of the last 200 episodes" if kind == "dqn"
            else "episode cost: mean of the update's episodes")
    fig.suptitle("\n".join(t for t in (title, what) if t))
    return fig


def training_figures(histories: pd.DataFrame, label: str = ""):
    """One figure per trained policy, ``training_<policy>``: yields ``(name, figure, note)``;
    a single note when there is no history at all."""
    if histories.empty:
        yield "training", None, "no training history of a DQN or policy-gradient fit"
        return
    for policy, h in histories.groupby("policy", sort=True):
        title = f"{label}: {policy} training" if label else f"{policy} training"
        yield f"training_{slug(policy)}", training_figure(h, title), ""
