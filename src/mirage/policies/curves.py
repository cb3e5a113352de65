"""Learning curves of the reinforcement-learning policies: held-out cost against environment
steps, over several training seeds (their plateau: mirage.evaluate.curves).

The training samples are cut in time: the earlier ``1 - held_share`` of them train, the last
``held_share`` are held out (what a policy fitted today meets next month). At every point of a
fit's ``history_`` (about 60 per fit, ``mirage.policies.neural.record_every``) the network being
trained decides greedily (score above 0) on every held-out point; the held-out cost is the mean
cost per sample of those decisions, beside reactive's and the oracle's on the same samples.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mirage.outcomes import SampleSet, cost, reference_outcomes
from mirage.policies.tuning import HeldOutBlock

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
