"""Time-ordered cross-fitting: how a learned policy picks its decision threshold.

Every learned policy here turns a model output into a decision with one free number: the
regressors submit once the predicted x reaches a threshold, the quantile lead clips its lead,
DQN compares Q(submit) - Q(wait) with a margin, policy gradient compares its submit logit with
a cut. Choosing that number on the same points the model was fitted on rewards over-fitting
(a forest's in-sample predictions are almost exact), and a random holdout of training
samples has the training months' load, which need not be the future's: on the real
Lonestar6 trace training (Nov-Feb) is heavier than the March validation and February heavier
than the rest, so thresholds tuned either way submit far too early in March.

Here the training samples are cut into ``n_blocks`` consecutive blocks of time. For each block
the model is fitted on the other blocks and scores the block (out-of-sample, in another
month), and a candidate threshold is judged by the mean over blocks of its cost divided by
the reactive cost of the block. The ratio gives a light month as much say as a heavy one, so
the choice is not dictated by the heaviest month of the training window (the plain mean cost
is). Validation data are never used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from mirage.outcomes import SampleSet, cost, first_true_grouped, mask_outcomes

# below this reactive cost a block is "nothing to win" and would blow the ratio up
_MIN_REFERENCE_COST = 1e-6


@dataclass
class HeldOutBlock:
    """One time block of the training samples, scored by a model fitted without it."""

    data: SampleSet
    score: np.ndarray  # the model's per-point output on data.points (any shape the rule reads)
    reactive_cost: float
    # the points' k, x_h and each sample's first row: read once, since a sweep asks for the
    # outcomes of thousands of masks over the same block
    _k: np.ndarray = field(init=False, repr=False)
    _x: np.ndarray = field(init=False, repr=False)
    _starts: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        pts = self.data.points
        self._k = pts["k"].to_numpy()
        self._x = pts["x_h"].to_numpy(dtype=float)
        self._starts = self.data.point_starts()

    def outcomes(self, mask: np.ndarray) -> np.ndarray:
        """x_h of each sample's first submit under ``mask`` (mirage.outcomes.mask_outcomes)."""
        first = first_true_grouped(np.asarray(mask, dtype=bool), self._k, self._starts)
        return self._x[self._starts + first]


def held_out(part: SampleSet, score: np.ndarray, c_I: float = 1.0, c_O: float = 0.5) -> HeldOutBlock:
    """``part`` scored by a model that did not see it, with its reactive cost as the reference
    (floored, so a block with nothing to win does not blow the ratio up)."""
    reactive = cost(mask_outcomes(part, np.zeros(len(part.points), bool)), c_I, c_O)
    return HeldOutBlock(part, score, max(float(reactive.mean()), _MIN_REFERENCE_COST))


def time_blocks(data: SampleSet, n_blocks: int) -> list[np.ndarray]:
    """Sample ids in ``n_blocks`` consecutive blocks of sample start time (empty ones dropped)."""
    if n_blocks < 2:
        raise ValueError(f"time-ordered tuning needs at least 2 blocks, not {n_blocks}")
    order = data.samples.sort_values(["sample_start", "sample_id"])["sample_id"].to_numpy()
    return [b for b in np.array_split(order, n_blocks) if len(b)]


def cross_fit(train: SampleSet, n_blocks: int,
              fit_score: Callable[[SampleSet, SampleSet], np.ndarray],
              c_I: float = 1.0, c_O: float = 0.5, every: int = 1) -> list[HeldOutBlock]:
    """Score every time block with ``fit_score(fit_part, held_block)``, a model fitted on the
    other blocks; the scores are what the policy's decision rule reads.

    ``every``: the held-out block keeps every ``every``-th of its samples in time order (the
    model is still fitted on all of the other blocks' samples), for a model whose scoring costs
    more than its fit: the history models score every decision point of a sample."""
    if int(every) < 1:
        raise ValueError(f"every must be a positive number of samples, not {every}")
    blocks = time_blocks(train, n_blocks)
    if len(blocks) < 2:
        raise ValueError(f"time-ordered tuning needs at least 2 training samples, "
                         f"got {len(train)}")
    ids = train.sample_ids
    out = []
    for b in blocks:
        part = train.subset(b[::int(every)])
        score = np.asarray(fit_score(train.subset(np.setdiff1d(ids, b)), part))
        out.append(held_out(part, score, c_I, c_O))
    return out


def cost_ratio(blocks: Iterable[HeldOutBlock],
               rule: Callable[[HeldOutBlock], np.ndarray],
               c_I: float = 1.0, c_O: float = 0.5) -> float:
    """Mean over blocks of (mean cost of the rule's first submits) / (reactive cost)."""
    return float(np.mean([
        cost(b.outcomes(rule(b)), c_I, c_O).mean() / b.reactive_cost
        for b in blocks]))


def sweep(blocks: list[HeldOutBlock], candidates: Iterable[dict],
          rule: Callable[[HeldOutBlock, dict], np.ndarray],
          c_I: float = 1.0, c_O: float = 0.5) -> tuple[dict, pd.DataFrame]:
    """Every candidate's cost ratio; the best candidate (the first one on ties: list the
    cautious candidates first) and the whole sweep as a table."""
    rows = []
    for cand in candidates:
        ratio = cost_ratio(blocks, lambda b: rule(b, cand), c_I, c_O)
        rows.append({**cand, "cost_ratio": ratio})
    table = pd.DataFrame(rows)
    if table.empty:
        raise ValueError("no candidate thresholds to tune over")
    best = table.loc[table["cost_ratio"].idxmin()].drop("cost_ratio").to_dict()
    return best, table


PLAN = "plan"  # best_threshold's default veto: baselines.plan_allows where the plan is recorded


def best_threshold(blocks: list[HeldOutBlock], thresholds, c_I: float = 1.0, c_O: float = 0.5,
                   strict: bool = False, allows=PLAN) -> tuple[float, bool, pd.DataFrame]:
    """The threshold on the blocks' scores (submit once score >= t, or > t if ``strict``)
    with the lowest cost ratio, and whether the scheduler's veto goes with it.

    ``allows``: one boolean array per block that a vetoed candidate may submit at; the default
    takes baselines.plan_allows of each block's points when the samples record the plan;
    None offers no veto. Candidates run unvetoed first and from the highest threshold down,
    so a tie keeps the plain rule and the later, less overlapping submit. Returns
    (threshold, gate, sweep).
    """
    if isinstance(allows, str) and allows == PLAN:
        from mirage.policies.baselines import PLAN_COLUMN, plan_allows

        recorded = all(PLAN_COLUMN in b.data.points.columns for b in blocks)
        allows = [plan_allows(b.data.points) for b in blocks] if recorded else None
    gates = (False,) if allows is None else (False, True)
    by_block = {} if allows is None else {id(b): a for b, a in zip(blocks, allows)}
    candidates = [{"gate": g, "threshold": float(t)}
                  for g in gates for t in np.sort(np.asarray(thresholds))[::-1]]

    def rule(b, c):
        hit = b.score > c["threshold"] if strict else b.score >= c["threshold"]
        return hit & by_block[id(b)] if c["gate"] else hit

    best, table = sweep(blocks, candidates, rule, c_I, c_O)
    return float(best["threshold"]), bool(best["gate"]), table
