"""The plateau of a learning curve (mirage.policies.curves records the curves): where more
training stops changing what the policy decides on held-out samples.

Criterion: the mean over seeds of the held-out cost is *flat from step s* when every checkpoint
at or after s lies within ``TOLERANCE`` (5 %) of reactive's held-out cost from the curve's final
level (the mean of its last fifth of checkpoints). The plateau step is the smallest such s; a
curve *converged* when its plateau step is at most ``CONVERGED_SHARE`` (60 %) of its steps, so
that at least the last 40 % of the run changed nothing that matters.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: within this share of reactive's held-out cost of the final level counts as flat
TOLERANCE = 0.05
#: a curve converged when flat from at most this share of its steps on
CONVERGED_SHARE = 0.6
#: the final level: the mean of this last share of a curve's checkpoints
FINAL_SHARE = 0.2


def seed_mean(curve: pd.DataFrame) -> pd.DataFrame:
    """One policy's curve averaged over its seeds at each checkpoint (checkpoints are the same
    for every seed of DQN; for the policy gradients, whose steps vary with the episodes drawn,
    each seed's k-th checkpoint is averaged, at the seeds' mean step)."""
    c = curve.sort_values(["seed", "env_steps"]).copy()
    c["checkpoint"] = c.groupby("seed").cumcount()
    g = c.groupby("checkpoint")
    out = g[["env_steps", "held_out_cost"]].mean()
    out["spread"] = g["held_out_cost"].std(ddof=0)
    out["seeds"] = g.size()
    keep = out["seeds"] == out["seeds"].max()  # checkpoints every seed reached
    return out[keep].reset_index()


def plateau(curve: pd.DataFrame, tolerance: float = TOLERANCE,
            converged_share: float = CONVERGED_SHARE) -> dict:
    """The plateau of one policy's curve (see the module's criterion)."""
    m = seed_mean(curve)
    cost_ = m["held_out_cost"].to_numpy()
    steps = m["env_steps"].to_numpy()
    n_final = max(1, int(np.ceil(len(cost_) * FINAL_SHARE)))
    final = float(cost_[-n_final:].mean())
    reactive = float(curve["reactive_cost"].iloc[0])
    tol = tolerance * max(reactive, 1e-9)
    off = np.flatnonzero(np.abs(cost_ - final) > tol)
    first_flat = 0 if len(off) == 0 else int(off[-1]) + 1
    plateau_steps = int(steps[min(first_flat, len(steps) - 1)])
    total = int(steps[-1])
    return {
        "policy": str(curve["policy"].iloc[0]), "seeds": int(curve["seed"].nunique()),
        "env_steps": total, "plateau_steps": plateau_steps,
        "converged": bool(plateau_steps <= converged_share * total),
        "final_cost": final, "final_spread": float(m["spread"].to_numpy()[-n_final:].mean()),
        "reactive_cost": reactive, "oracle_cost": float(curve["oracle_cost"].iloc[0]),
        "best_cost": float(cost_.min()), "tolerance_h": tol,
    }


def plateaus(curves: pd.DataFrame, **kw) -> pd.DataFrame:
    """:func:`plateau` of every policy in ``curves``."""
    return pd.DataFrame([plateau(c, **kw) for _, c in curves.groupby("policy", sort=False)])


def drawn(curves: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the curves figure draws from ``curves`` (rows of several policies, simulator modes
    and chain sizes): the mean over seeds with their range per checkpoint, and the plateaus."""
    keys = ["mode", "chain_nodes", "policy"]
    means, flats = [], []
    for key, c in curves.groupby(keys, sort=False):
        m = seed_mean(c)
        c = c.sort_values(["seed", "env_steps"]).assign(
            checkpoint=lambda d: d.groupby("seed").cumcount())
        span = c.groupby("checkpoint")["held_out_cost"].agg(low="min", high="max")
        m = m.join(span, on="checkpoint")
        m["reactive_cost"], m["oracle_cost"] = c["reactive_cost"].iloc[0], c["oracle_cost"].iloc[0]
        means.append(m.assign(**dict(zip(keys, key))))
        flats.append({**dict(zip(keys, key)), **plateau(c)})
    return pd.concat(means, ignore_index=True), pd.DataFrame(flats)
