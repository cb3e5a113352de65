"""What the headline figure (mirage.figures.headline) draws, computed from the outcomes.

Per (mode, chain size): every policy's mean interruption and mean overlap per handover over the
validation samples, with 95 % bootstrap intervals (percentile, over samples or whole blocks of
successive samples as the evaluation's intervals, the same resamples for every policy), and the role of the ones a reader asks about: reactive resubmission, the
best baseline, the paper's method (REINFORCE, ``pg``), the best learned policy (by mean cost on
these samples, so optimistic) and the oracle, which knows the future.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.evaluate.claims import PAPER_METHOD, best_learned
from mirage.evaluate.metrics import BASELINES, resample_weights, resampled_means

N_BOOT = 1000
#: the columns of headline_points
COLUMNS = ["policy", "interruption_h", "interruption_h_low", "interruption_h_high", "overlap_h",
           "overlap_h_low", "overlap_h_high", "role", "role_rank", "samples"]


def named_policies(part: pd.DataFrame) -> dict[str, str]:
    """policy -> its role in the headline, for one cell's outcomes, in the legend's order."""
    cost = part.groupby("policy")["cost"].mean()
    roles: dict[str, str] = {}
    if "reactive" in cost:
        roles["reactive"] = "reactive"
    base = cost[[p for p in cost.index if p in BASELINES and p != "reactive"]]
    if len(base):
        roles.setdefault(str(base.idxmin()), "best baseline")
    if PAPER_METHOD in cost:
        roles.setdefault(PAPER_METHOD, "paper's method")
    best = best_learned(part)
    if best is not None:
        roles[best] = ("paper's method, best learned" if best == PAPER_METHOD
                       else "best learned")
    if "oracle" in cost:
        roles["oracle"] = "oracle"
    return roles


def means_with_intervals(part: pd.DataFrame, seed: int, block: int = 1) -> pd.DataFrame:
    """Per policy: mean interruption and overlap (a mean over training seeds per sample) and
    their 95 % bootstrap intervals over samples (the same resamples for every policy; ``block``
    > 1: whole blocks of that many successive sample starts, metrics.resample_weights)."""
    per = (part.groupby(["policy", "sample_id"])[["interruption_h", "overlap_h"]].mean()
           .unstack("policy"))
    weights = resample_weights(per.index.to_numpy(), N_BOOT, np.random.default_rng(seed), block)
    rows = []
    for policy in per["interruption_h"].columns:
        row = {"policy": policy}
        for metric in ("interruption_h", "overlap_h"):
            v = per[metric][policy].to_numpy(dtype=float)
            lo, hi = np.percentile(resampled_means(v, weights), [2.5, 97.5])
            row |= {metric: v.mean(), f"{metric}_low": lo, f"{metric}_high": hi}
        rows.append(row)
    return pd.DataFrame(rows)


def headline_points(out: pd.DataFrame, seed: int = 0, block: int = 1) -> pd.DataFrame:
    """One row per (mode where ``out`` has it, chain size, policy): COLUMNS, with ``role`` its
    role ("" for a policy the headline does not name), ``role_rank`` the legend's order of the
    named ones (-1 for the others) and ``samples`` the cell's validation samples; ``block`` as
    means_with_intervals'."""
    keys = [k for k in ("mode", "chain_nodes") if k in out.columns]
    frames = []
    for key, part in out.groupby(keys, sort=True):
        means = means_with_intervals(part, seed, block)
        roles = named_policies(part)
        rank = {p: i for i, p in enumerate(roles)}
        means = means.assign(role=means["policy"].map(roles).fillna(""),
                             role_rank=means["policy"].map(rank).fillna(-1).astype(int),
                             samples=part["sample_id"].nunique())
        frames.append(means.assign(**dict(zip(keys, key))))
    if not frames:
        return pd.DataFrame(columns=keys + COLUMNS)
    return pd.concat(frames, ignore_index=True)[keys + COLUMNS]
