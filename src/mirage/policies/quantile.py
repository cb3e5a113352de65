"""Newsvendor lead: quantile regression of the successor's wait if submitted now.

Submitting with r hours left and a wait W gives x = W - r, so the cost
c_I*max(W-r, 0) + c_O*max(r-W, 0) is a newsvendor problem in r whose optimum is the
tau = c_I/(c_I+c_O) quantile of W. The policy predicts that quantile at every point from the
features and submits as soon as it reaches the time left. Only points with a running
predecessor are used: while it is pending the time left is unknown (at least 48 h), so the
rule never fires there, and its training target W = x + remaining is undefined.

Robustness to load shift (the real trace: training Nov-Feb is heavier than the March
validation, so a model fitted on all running points predicts waits, and so overlap, that are
too large):

- ``window_h``: fit only on running points with at most ``window_h`` hours left, where the
  decision is made (None: every running point, the first version); with ``tune=True`` the
  window is chosen from ``windows`` by the same cross-fit as the lead below;
- the lead is ``max(floor_h, min(q + margin_h, cap_h))``; with ``tune=True`` (default) fit()
  picks margin, floor (0, the fixed lead or the plan_lead baseline's lead tuned on the
  training data), cap (0 turns the model off) and whether the scheduler's plan may veto
  the model's part (``gate_``; the plan_lead floor always carries its veto) from grids by
  cross-fitting over ``n_blocks`` time-ordered blocks of the training samples (model fitted
  on the other blocks, scored on the block), minimising the mean over blocks of
  cost / reactive cost of that block. The ratio weighs a light month as much as a heavy one,
  so the choice is not dictated by the heaviest training month (cost is dominated by it, and
  the future need not be as loaded). Validation data are never used.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.policies.base import Policy
from mirage.outcomes import SampleSet, compact_matrix
from mirage.policies.tuning import cross_fit, sweep

DEFAULT_MARGINS = np.round(np.arange(-2.0, 1.0 + 1e-9, 0.25), 4)
# caps above window_h extrapolate the model; the cross-fit decides whether that pays
# cap 0 switches the model's lead off (only the floor submits early)
DEFAULT_CAPS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 48.0)
# training windows (hours left); None = every running point
DEFAULT_WINDOWS = (1.0, 2.0, 4.0, 8.0, None)


class QuantileLead(Policy):
    name = "quantile"

    def __init__(self, c_I: float = 1.0, c_O: float = 0.5, max_iter: int = 100,
                 learning_rate: float = 0.1, max_leaf_nodes: int = 31,
                 min_samples_leaf: int = 40, margin_h: float = 0.0,
                 window_h: float | None = 2.0, floor_h: float = 0.0,
                 cap_h: float | None = None, tune: bool = True, n_blocks: int = 4,
                 margins=None, caps=None, windows=None):
        # the grids stay as given (None: the defaults above), as scikit-learn keeps them
        self.c_I, self.c_O = c_I, c_O
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.margin_h, self.window_h, self.floor_h, self.cap_h = margin_h, window_h, floor_h, cap_h
        self.tune = tune
        self.n_blocks = n_blocks
        self.margins, self.caps, self.windows = margins, caps, windows

    # ---- settings --------------------------------------------------------------------------
    def grids(self) -> tuple[np.ndarray, np.ndarray, tuple]:
        """The margins, caps and training windows the tuning chooses from."""
        return (np.asarray(DEFAULT_MARGINS if self.margins is None else self.margins, dtype=float),
                np.asarray(DEFAULT_CAPS if self.caps is None else self.caps, dtype=float),
                tuple(DEFAULT_WINDOWS if self.windows is None else self.windows))

    def newsvendor_tau(self) -> float:
        """The cost-optimal quantile of the wait, c_I / (c_I + c_O)."""
        return self.c_I / (self.c_I + self.c_O)

    def _untuned(self) -> None:
        """The fitted settings as the constructor gives them (the rule without tuning)."""
        self.window_h_ = _window(self.window_h)
        self.margin_h_, self.floor_h_ = float(self.margin_h), float(self.floor_h)
        self.cap_h_ = np.inf if self.cap_h is None else float(self.cap_h)
        self.gate_ = self.floor_gate_ = False  # the plan veto, see _lead_mask
        self.tune_sweep_ = None

    # ---- model -----------------------------------------------------------------------------
    def _fit_model(self, data: SampleSet, seed: int, window_h: float, tau: float | None = None):
        from sklearn.ensemble import HistGradientBoostingRegressor

        pts = data.points
        rem = pts["pred_remaining_h"].to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            rows = pts["pred_running"].to_numpy(dtype=bool) & (rem <= window_h)
        pts = pts[rows]
        wait = pts["x_h"].to_numpy(dtype=float) + pts["pred_remaining_h"].to_numpy(dtype=float)
        # 100 rounds: 2.3 s on 180k rows when the 2 cores were free, but 200 rounds took
        # 112 s while other jobs held them (OpenMP threads contend), and 100 were as good.
        # early_stopping off: its internal random split would make results depend on n_rows
        model = HistGradientBoostingRegressor(
            loss="quantile", quantile=self.tau_ if tau is None else tau, max_iter=self.max_iter,
            learning_rate=self.learning_rate, max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf, early_stopping=False, random_state=seed)
        model.fit(compact_matrix(pts, self.feature_columns_), np.maximum(wait, 0.0))
        return model

    @staticmethod
    def _lead_mask(points, q, margin, floor, cap, gate=False, floor_gate=False,
                   allow=None, lead_inputs=None) -> np.ndarray:
        """Submit once the time left is at most min(q + margin, cap) (the model's lead) or at
        most ``floor``; ``gate`` / ``floor_gate`` let the plan veto (``allow``, see
        baselines.plan_allows) the model's part / the floor's part. ``lead_inputs``:
        ``lead_inputs(points)`` when a caller asks for many rules on the same points."""
        running, remaining = lead_inputs or QuantileLead.lead_inputs(points)
        if (gate or floor_gate) and allow is None:
            from mirage.policies.baselines import plan_allows

            allow = plan_allows(points)
        with np.errstate(invalid="ignore"):
            model = running & (remaining <= np.minimum(q + margin, cap))
            floor_part = running & (remaining <= floor)
        if gate:
            model &= allow
        if floor_gate:
            floor_part &= allow
        return model | floor_part

    @staticmethod
    def lead_inputs(points) -> tuple[np.ndarray, np.ndarray]:
        """What the lead rule reads of the points: predecessor running, hours it has left."""
        return (points["pred_running"].to_numpy(dtype=bool),
                points["pred_remaining_h"].to_numpy(dtype=float, na_value=np.nan))

    def candidates(self, train: SampleSet) -> list[dict]:
        """The lead rules the cross-fit chooses from (gate, floor_h, floor_gate, margin_h,
        cap_h; see _lead_mask), in the order that breaks ties. The floors are the lead
        baselines tuned on ``train``."""
        from mirage.policies.baselines import (
            DEFAULT_LEADS, PLAN_COLUMN, lead_sweep, plan_allows,
        )

        c_I, c_O = self.c_I, self.c_O
        margins, caps, _ = self.grids()
        leads = lead_sweep(train, DEFAULT_LEADS, c_I, c_O)
        floors = [(0.0, False), (float(leads.loc[leads["cost"].idxmin(), "lead_h"]), False)]
        gates = [False]
        if PLAN_COLUMN in train.points.columns:
            # the plan veto on the model's lead, and the plan_lead baseline as a floor: with
            # cap 0 the candidates include both lead baselines, so the cross-fit can conclude
            # that the model adds nothing
            planned = lead_sweep(train, DEFAULT_LEADS, c_I, c_O, allow=plan_allows(train.points))
            floors.append((float(planned.loc[planned["cost"].idxmin(), "lead_h"]), True))
            gates.append(True)
        return [{"gate": gate, "floor_h": floor, "floor_gate": floor_gate,
                 "margin_h": float(margin), "cap_h": float(cap)}
                for gate in gates for floor, floor_gate in dict.fromkeys(floors)
                for cap in caps
                for margin in (margins if cap > 0 else (0.0,))]

    def _tune(self, train: SampleSet, seed: int) -> None:
        from mirage.policies.baselines import plan_allows

        c_I, c_O = self.c_I, self.c_O
        candidates = self.candidates(train)
        vetoed = any(c["gate"] for c in candidates)
        found, tables = [], []
        for window in map(_window, self.grids()[2]):
            blocks = cross_fit(
                train, self.n_blocks,
                lambda fit_part, held: self._fit_model(fit_part, seed, window).predict(
                    compact_matrix(held.points, self.feature_columns_)),
                c_I, c_O)
            allow = {id(b): (plan_allows(b.data.points) if vetoed else None) for b in blocks}
            inputs = {id(b): self.lead_inputs(b.data.points) for b in blocks}
            best, table = sweep(
                blocks, candidates,
                lambda b, c: self._lead_mask(b.data.points, b.score, c["margin_h"],
                                             c["floor_h"], c["cap_h"], c["gate"],
                                             c["floor_gate"], allow[id(b)], inputs[id(b)]),
                c_I, c_O)
            table.insert(0, "window_h", window)
            found.append((float(table["cost_ratio"].min()), window, best))
            tables.append(table)
        self.tune_sweep_ = pd.concat(tables, ignore_index=True)
        _, self.window_h_, best = min(found, key=lambda f: f[0])  # first window on ties
        self.floor_h_, self.margin_h_, self.cap_h_ = (
            float(best["floor_h"]), float(best["margin_h"]), float(best["cap_h"]))
        self.gate_, self.floor_gate_ = bool(best["gate"]), bool(best["floor_gate"])

    # ---- interface -------------------------------------------------------------------------
    def fit(self, train: SampleSet, seed: int = 0):
        self.feature_columns_ = train.feature_columns
        self.tau_ = self.newsvendor_tau()
        self._untuned()
        if self.tune:
            self._tune(train, seed)
        self.model_ = self._fit_model(train, seed, self.window_h_)
        return self

    def predict_wait(self, points: pd.DataFrame) -> np.ndarray:
        return self.model_.predict(compact_matrix(points, self.feature_columns_))

    def submit_mask(self, points, windows=None):
        if getattr(self, "model_", None) is None:
            raise RuntimeError(f"{self.name} policy is not fitted; call fit() first")
        return self._lead_mask(points, self.predict_wait(points), self.margin_h_,
                               self.floor_h_, self.cap_h_, self.gate_, self.floor_gate_)


def _window(window_h: float | None) -> float:
    """Hours left below which points train the model; None (every running point) is inf."""
    return np.inf if window_h is None else float(window_h)
