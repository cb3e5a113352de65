"""Service-level lead: the quantile lead tuned for a share of uninterrupted handovers.

The cost-optimal quantile lead (quantile.py) answers "an hour of interruption costs c_I, an
hour of overlap c_O". Operators often state the goal the other way round: at least
``target_share`` of the successors must start before the predecessor ends, in busy weeks as
in quiet ones, with at most ``max_overlap_h`` hours of overlap on average. This policy keeps
the quantile lead's rule (submit once the predicted wait reaches the time left) and chooses
the quantile ``tau`` of the predicted wait for that service level instead of from the costs.

For every tau of ``taus`` it cross-fits the model over ``n_blocks`` time-ordered blocks of the
training samples (as every tuned policy does, :mod:`mirage.policies.tuning`), takes each
held-out sample's outcome and groups the samples by load level (by their reactive outcome,
which is known for training samples). It keeps the smallest tau whose uninterrupted share
reaches the target at every level with at least ``min_level_samples`` samples while each
level's mean overlap stays within the budget. When no tau reaches the target, it takes the
one with the best worst-level share within the budget: the training window can be heavier
than the future (on the real Lonestar6 trace it is), so a target out of reach there may still
be met later. Validation data are never used. The taus are cross-fitted in ascending order and
the sweep stops at the first that meets the service level, since no larger one can be chosen
then (on real ls6, calibrated 1 node, the first of eight: one cross-fit instead of eight).
``service_sweep_`` keeps the table of the taus cross-fitted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.outcomes import SampleSet, compact_matrix, mask_outcomes
from mirage.policies.quantile import QuantileLead, _window
from mirage.policies.tuning import cross_fit

DEFAULT_TAUS = (0.667, 0.75, 0.8, 0.85, 0.9, 0.95, 0.975, 0.99)


class ServiceLevel(QuantileLead):
    name = "service_level"

    def __init__(self, target_share: float = 0.8, max_overlap_h: float = 6.0, tau: float = 0.9,
                 taus=None, min_level_samples: int = 30, window_h: float | None = None,
                 tune: bool = True, n_blocks: int = 4, c_I: float = 1.0, c_O: float = 0.5,
                 max_iter: int = 100, learning_rate: float = 0.1, max_leaf_nodes: int = 31,
                 min_samples_leaf: int = 40):
        # the service level and the quantiles it is tuned over
        self.target_share, self.max_overlap_h = target_share, max_overlap_h
        self.tau, self.taus, self.min_level_samples = tau, taus, min_level_samples
        # the quantile model's training window, its tuning and the costs
        self.window_h, self.tune, self.n_blocks = window_h, tune, n_blocks
        self.c_I, self.c_O = c_I, c_O
        # the gradient-boosted model's settings
        self.max_iter, self.learning_rate = max_iter, learning_rate
        self.max_leaf_nodes, self.min_samples_leaf = max_leaf_nodes, min_samples_leaf

    def _tau_grid(self) -> tuple[float, ...]:
        """The quantiles the service level is tuned over, checked."""
        taus = tuple(float(t) for t in (DEFAULT_TAUS if self.taus is None else self.taus))
        if not taus or not all(0.0 < t < 1.0 for t in taus):
            raise ValueError(f"taus must be quantiles in (0, 1), not {taus}")
        return taus

    def fit(self, train: SampleSet, seed: int = 0):
        if not 0.0 < self.target_share <= 1.0:
            raise ValueError(f"target_share must be in (0, 1], not {self.target_share}")
        self._tau_grid()
        return super().fit(train, seed)

    def newsvendor_tau(self) -> float:
        return float(self.tau)  # the quantile without tuning; fit() tunes it into tau_

    def _untuned(self) -> None:
        self.window_h_ = _window(self.window_h)
        self.margin_h_, self.floor_h_, self.cap_h_ = 0.0, 0.0, np.inf
        self.gate_ = self.floor_gate_ = False
        self.tune_sweep_ = None
        self.service_sweep_, self.target_met_ = None, None

    def _tune(self, train: SampleSet, seed: int) -> None:
        from mirage.outcomes import reference_outcomes

        c_I, c_O = self.c_I, self.c_O
        service = (float(self.target_share), float(self.max_overlap_h), int(self.min_level_samples))
        frames = []
        for tau in sorted(self._tau_grid()):
            blocks = cross_fit(
                train, self.n_blocks,
                lambda fit_part, held, tau=tau: self._fit_model(
                    fit_part, seed, self.window_h_, tau).predict(
                        compact_matrix(held.points, self.feature_columns_)),
                c_I, c_O)
            x = np.concatenate([mask_outcomes(b.data, self._lead_mask(
                b.data.points, b.score, 0.0, 0.0, np.inf)) for b in blocks])
            reactive = np.concatenate([reference_outcomes(b.data, c_I, c_O)["reactive_x_h"]
                                       for b in blocks])
            frames.append(level_service(x, reactive).assign(tau=tau))
            if choose_tau(frames[-1], *service)[1]:
                break  # the smallest tau that meets it: a larger one is never chosen
        table = pd.concat(frames, ignore_index=True)
        self.tau_, self.target_met_ = choose_tau(table, *service)
        self.service_sweep_ = table


def level_service(x_h, reactive_x_h) -> pd.DataFrame:
    """Per load level (and ``all``): samples, uninterrupted share and mean overlap (h)."""
    from mirage.outcomes import ALL, load_level

    x = np.asarray(x_h, dtype=float)
    levels = load_level(reactive_x_h)
    rows = []
    for level in (ALL, "low", "medium", "heavy"):
        sel = np.ones(len(x), bool) if level == ALL else levels == level
        if sel.any():
            rows.append({"load_level": level, "n": int(sel.sum()),
                         "zero_interruption_share": float((x[sel] <= 0).mean()),
                         "mean_overlap_h": float(np.maximum(-x[sel], 0.0).mean())})
    return pd.DataFrame(rows)


def choose_tau(table: pd.DataFrame, target_share: float, max_overlap_h: float,
               min_level_samples: int) -> tuple[float, bool]:
    """The smallest tau meeting the service level at every counted level; failing that the
    best worst-level share within the overlap budget; failing that the smallest tau.

    Levels with fewer than ``min_level_samples`` samples are not counted (their share is
    noise); when no level has that many, the pooled ``all`` row is judged instead.
    """
    levels = table[table["load_level"] != "all"]
    counted = levels[levels["n"] >= min_level_samples]
    if counted.empty:
        counted = table[table["load_level"] == "all"]
    worst = counted.groupby("tau").agg(share=("zero_interruption_share", "min"),
                                       overlap=("mean_overlap_h", "max")).sort_index()
    within = worst[worst["overlap"] <= max_overlap_h]
    met = within[within["share"] >= target_share]
    if not met.empty:
        return float(met.index[0]), True
    if not within.empty:
        return float(within["share"].idxmax()), False  # idxmax: the smallest tau on ties
    return float(worst.index[0]), False
