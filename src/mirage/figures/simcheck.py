"""The figure of ``mirage bench slurm-sim`` (mirage.bench.slurm_sim; the experiment:
mirage.live.simcheck): simulated vs real start of every job, and of every leave-one-out
what-if probe, drawn from the experiment's per_job.csv.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the views' names in the distribution panel
SHORT = {"sim_start_s": "replay", "whatif_start_s": "what-if probes", "resync_start_s": "from each submit",
         "step_start_s": "the last minute", "again_start_s": "Slurm against itself"}


def start_scatter(per_job: pd.DataFrame, interval_s: int):
    """In the house style (``style.styled``; imported here so that building the command line
    loads no matplotlib). Simulated vs real start, minutes from the first submit, the band one
    scheduling interval either side: every job in one replay from the first submit; the what-if
    probes (left out, inserted at their submit into a warm start from the recorded state); every
    job simulated from the recorded state at its submit; and from the recorded state 60 s before
    its real start. With an ``again_start_s`` column (a second run of the same workload on
    Slurm), that run's starts against the first's, and every view's error distribution beside
    Slurm's own run-to-run difference."""
    from mirage.figures.style import styled

    return styled(_start_scatter)(per_job, interval_s)


def _start_scatter(per_job: pd.DataFrame, interval_s: int):
    import matplotlib.pyplot as plt

    from mirage.figures.style import DOUBLE_W, ROLE_COLORS

    if per_job.empty:
        return None
    again = "again_start_s" in per_job and per_job["again_start_s"].notna().any()
    fig, axes = plt.subplots(2, 3 if again else 2, figsize=(DOUBLE_W * (1.4 if again else 1), 5.6),
                             layout="constrained")

    def some(col):
        return per_job[per_job[col].notna()] if col in per_job else per_job[:0]

    panels = [("replay from the first submit", "sim_start_s", per_job),
              ("what-if probes (left out, inserted at their submit)", "whatif_start_s", some("whatif_start_s")),
              ("each job from the recorded state at its submit", "resync_start_s", some("resync_start_s")),
              ("the last minute: from the recorded state\n60 s before each job's start", "step_start_s",
               some("step_start_s"))]
    if again:
        panels.append(("Slurm against itself: the same workload\nrun again on the same cluster",
                       "again_start_s", some("again_start_s")))
    kinds = {"plain": "o", "held": "s", "begin": "^", "dep": "D", "probe": "*"}
    for ax, (title, col, d) in zip(axes.flat, panels):
        d = d[d[col] >= 0]
        if d.empty:
            ax.set_axis_off()
            continue
        real = d["real_start_s"].to_numpy() / 60
        sim = d[col].to_numpy() / 60
        lo, hi = 0.0, float(max(real.max(), sim.max())) * 1.02 + 0.1
        xs = np.array([lo, hi])
        ax.fill_between(xs, xs - interval_s / 60, xs + interval_s / 60, color="0.85", lw=0,
                        label=f"within {interval_s} s")
        ax.plot(xs, xs, color=ROLE_COLORS["real"], lw=0.6)
        for kind, marker in kinds.items():
            k = d["kind"].to_numpy() == kind
            if k.any():
                ax.scatter(real[k], sim[k], s=10 if marker != "*" else 24, marker=marker, lw=0.3,
                           color=ROLE_COLORS["compat"] if col == "whatif_start_s" else ROLE_COLORS["sim"],
                           alpha=0.75, edgecolor="white", label=kind)
        err = np.abs(d[col] - d["real_start_s"])
        ax.set_title(f"{title}\n{(err <= interval_s).mean():.0%} within {interval_s} s, "
                     f"MAE {err.mean():.0f} s", fontsize=6.5)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("real start (min)")
        ax.set_ylabel("the other run's start (min)" if col == "again_start_s" else "simulated start (min)")
        ax.legend(fontsize=6, loc="upper left", frameon=False)
    if again:
        # every view's |start difference| as a distribution, beside Slurm's own run to run
        ax = axes.flat[5]
        for title, col, d in panels:
            d = d[d[col] >= 0]
            err = np.sort(np.abs(d[col] - d["real_start_s"]).to_numpy()) + 1
            ax.step(err, np.arange(1, len(err) + 1) / len(err), where="post", lw=1.0,
                    color="black" if col == "again_start_s" else None,
                    label=SHORT[col])
        ax.axvline(interval_s + 1, color="0.6", lw=0.6, ls="--")
        ax.set_xscale("log")
        ax.set_xlabel("|start difference| + 1 (s)")
        ax.set_ylabel("share of jobs")
        ax.set_title("how far each view is from Slurm's start", fontsize=6.5)
        ax.legend(fontsize=5.5, loc="lower right", frameon=False)
    return fig
