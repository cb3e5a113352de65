"""Learning curves of the reinforcement-learning policies: held-out cost against environment
steps, over several training seeds, and the step from which a curve is flat (its plateau).

The training samples are cut in time: the earlier ``1 - held_share`` of them train, the last
``held_share`` are held out (what a policy fitted today meets next month). At every point of a
fit's ``history_`` (about 60 per fit, ``mirage.policies.neural.record_every``) the network being
trained decides greedily (score above 0) on every held-out point; the held-out cost is the mean
cost per sample of those decisions, beside reactive's and the oracle's on the same samples.

Plateau criterion (stated once, used by the report and the configs' budgets): the mean over
seeds of the held-out cost is *flat from step s* when every checkpoint at or after s lies within
``tolerance`` x reactive's held-out cost of the curve's final level (the mean of its last fifth
of checkpoints). The plateau step is the smallest such s; a curve *converged* when its plateau
step is at most ``converged_share`` (60 %) of its steps, so that the last 40 % of the run, at the
least, changed nothing that matters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mirage.outcomes import SampleSet, cost, reference_outcomes
from mirage.policies.tuning import HeldOutBlock

#: within this share of reactive's held-out cost of the final level counts as flat
TOLERANCE = 0.05
#: a curve converged when flat from at most this share of its steps on
CONVERGED_SHARE = 0.6
#: the final level: the mean of this last share of a curve's checkpoints
FINAL_SHARE = 0.2

CURVE_COLUMNS = ["policy", "seed", "env_steps", "held_out_cost", "train_episode_cost",
                 "entropy", "epsilon", "seconds"]


def time_split(train: SampleSet, held_share: float = 0.25) -> tuple[SampleSet, SampleSet]:
    """The earlier ``1 - held_share`` of ``train``'s samples by start time and the later rest."""
    if not 0 < held_share < 1:
        raise ValueError(f"held_share must lie strictly between 0 and 1, not {held_share}")
    order = train.samples.sort_values(["sample_start", "sample_id"])["sample_id"].to_numpy()
    n_held = max(1, int(round(len(order) * held_share)))
    if n_held >= len(order):
        raise ValueError(f"{len(order)} training samples are too few to hold some out")
    return train.subset(order[:-n_held]), train.subset(order[-n_held:])


@dataclass
class HeldOut:
    """The held-out samples and their reference costs (reactive, oracle)."""

    data: SampleSet
    c_I: float = 1.0
    c_O: float = 0.5

    def __post_init__(self):
        self.block = HeldOutBlock(self.data, np.zeros(0), reactive_cost=0.0)
        ref = reference_outcomes(self.data, self.c_I, self.c_O)
        self.reactive_cost = float(cost(ref["reactive_x_h"].to_numpy(), self.c_I, self.c_O).mean())
        self.oracle_cost = float(ref["oracle_cost"].mean())

    def cost_of(self, score: np.ndarray) -> float:
        """Mean cost per held-out sample of submitting at the first point scored above 0."""
        return float(cost(self.block.outcomes(np.asarray(score) > 0), self.c_I, self.c_O).mean())


class CurveRecorder:
    """A fit's ``monitor``: one row per checkpoint (held-out cost, the fit's own record)."""

    def __init__(self, held: HeldOut, policy_name: str, seed: int):
        self.held, self.name, self.seed = held, policy_name, seed
        self.rows: list[dict] = []
        self._t0 = time.perf_counter()
        self._seen = -1

    def __call__(self, env_steps: int, policy) -> None:
        if env_steps == self._seen:  # the end of a fit may fall on its last record
            return
        self._seen = env_steps
        last = policy.history_[-1] if getattr(policy, "history_", None) else {}
        self.rows.append({
            "policy": self.name, "seed": self.seed, "env_steps": int(env_steps),
            "held_out_cost": self.held.cost_of(policy.decision_score(self.held.data.points)),
            "train_episode_cost": last.get("mean_episode_cost", np.nan),
            "entropy": last.get("entropy", np.nan), "epsilon": last.get("epsilon", np.nan),
            "seconds": time.perf_counter() - self._t0,
        })


def learning_curve(make, name: str, train: SampleSet, seeds, held_share: float = 0.25,
                   c_I: float = 1.0, c_O: float = 0.5, progress=None) -> pd.DataFrame:
    """The curves of policy ``name`` (``make()`` builds it unfitted) over ``seeds``: fitted on
    the earlier part of ``train``, scored on its held-out later part at every checkpoint.
    ``progress(name, seed, rows)`` is told after each seed."""
    fit_part, held_part = time_split(train, held_share)
    held = HeldOut(held_part, c_I, c_O)
    frames = []
    for seed in seeds:
        rec = CurveRecorder(held, name, int(seed))
        make().fit(fit_part, seed=int(seed), monitor=rec)
        frame = pd.DataFrame(rec.rows, columns=CURVE_COLUMNS)
        frame["reactive_cost"], frame["oracle_cost"] = held.reactive_cost, held.oracle_cost
        frame["train_samples"], frame["held_out_samples"] = len(fit_part), len(held_part)
        frames.append(frame)
        if progress is not None:
            progress(name, int(seed), frame)
    return pd.concat(frames, ignore_index=True)


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
