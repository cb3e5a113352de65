"""Random forest and xgboost regressors of the outcome x, as in the reference.

The model predicts x (hours) of submitting now; the policy submits once the prediction is at
least ``threshold`` (the reference uses -0.5 h: accept up to half an hour of expected overlap).
``tune_threshold=True`` instead picks the threshold by time-ordered cross-fitting
(``mirage.policies.tuning``: fitted on all but one time block of the training samples, scored
on that block, lowest mean cost ratio over the blocks), then refits on all of them; the same
cross-fit decides whether the scheduler's plan may veto a submission (``gate_``, as in the
``plan_lead`` baseline), when the samples record it. In-sample
predictions would make the forest look perfect and pick a useless threshold; a random holdout
has the training months' load and picked thresholds that overlapped hours in a lighter month.

Features: "compact" (pred_* + f_* columns, the default because a 6048-wide matrix over every
point of ~700 samples does not fit a 2-core laptop), "history" (the reference's flattened
144x42 window) or "both". History modes train on ``points_per_sample`` random points per
sample (the reference used 7 probes).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.policies.base import Policy, derived_name
from mirage.outcomes import (
    SampleSet, compact_matrix, history_windows,
)
from mirage.policies.baselines import vetoed
from mirage.policies.tuning import best_threshold, cross_fit

FEATURE_MODES = ("compact", "history", "both")
DEFAULT_THRESHOLDS = np.round(np.arange(-8.0, 8.0 + 1e-9, 0.25), 4)


def _make_model(kind: str, seed: int, n_jobs: int, overrides: dict, wide: bool = False):
    if kind == "rf":
        from sklearn.ensemble import RandomForestRegressor
        # min_samples_leaf and max_samples keep 100 trees on ~200k rows within a minute
        # on 2 cores. With the 6048-wide history every split scanning all columns took
        # 280 s for 7 points x 560 samples; sqrt(columns) per split is the usual forest
        # choice for wide inputs.
        kw = dict(n_estimators=100, min_samples_leaf=5, max_samples=0.5, n_jobs=n_jobs,
                  random_state=seed, max_features="sqrt" if wide else 1.0)
        kw.update(overrides)
        return RandomForestRegressor(**kw)
    if kind == "xgb":
        from xgboost import XGBRegressor
        kw = dict(n_estimators=300, max_depth=6, learning_rate=0.1, subsample=0.8,
                  colsample_bytree=0.8, tree_method="hist", n_jobs=n_jobs,
                  random_state=seed)
        kw.update(overrides)
        return XGBRegressor(**kw)
    raise ValueError(f"unknown regressor kind {kind!r}; use 'rf' or 'xgb'")


class RegressorPolicy(Policy):
    """Submit once the regressor's predicted x reaches ``threshold`` (hours); the threshold in
    use after fit() is ``threshold_`` (``threshold`` itself, or the cross-fitted one of
    ``thresholds``, None: -8 to 8 h in quarter hours, with ``tune_threshold``).

    ``tune_model_params`` overrides ``model_params`` for the cross-fitted models alone (those
    that only score a held-out block to choose the threshold), e.g. fewer trees: on the real
    ls6 trace forests of 25 trees chose the same thresholds as 100 in a third of the time.
    The final model keeps ``model_params``, so it is still the untuned twin's fit."""

    def __init__(self, kind: str = "rf", features: str = "compact", threshold: float = -0.5,
                 tune_threshold: bool = False, thresholds=None, n_blocks: int = 4,
                 points_per_sample: int | None = None, c_I: float = 1.0, c_O: float = 0.5,
                 n_jobs: int = 2, model_params: dict | None = None,
                 tune_model_params: dict | None = None):
        self.kind = kind
        self.features = features
        self.threshold = threshold
        self.tune_threshold = tune_threshold
        self.thresholds = thresholds
        self.n_blocks = n_blocks
        self.points_per_sample = points_per_sample
        self.c_I, self.c_O = c_I, c_O
        self.n_jobs = n_jobs
        self.model_params = model_params
        self.tune_model_params = tune_model_params

    name = derived_name(lambda self: self.kind + ("_tuned" if self.tune_threshold else ""))

    @property
    def needs_history(self) -> bool:
        return self.features != "compact"

    def _check(self) -> None:
        if self.features not in FEATURE_MODES:
            raise ValueError(f"features must be one of {FEATURE_MODES}, not {self.features!r}")

    # ---- features --------------------------------------------------------------------------
    def _matrix(self, points: pd.DataFrame, windows: np.ndarray | None) -> np.ndarray:
        mode = self.features
        parts = []
        if mode in ("compact", "both"):
            parts.append(compact_matrix(points, self.feature_columns_))
        if mode in ("history", "both"):
            parts.append(np.asarray(windows, dtype=np.float32).reshape(len(points), -1))
        return np.hstack(parts) if len(parts) > 1 else parts[0]

    def _training_rows(self, data: SampleSet, seed: int):
        per = self.points_per_sample
        if per is None and self.needs_history:
            per = 7
        pts = data.points
        if per is None:
            return self._matrix(pts, None), pts["x_h"].to_numpy(dtype=float)
        rng = np.random.default_rng(seed)
        Xs, ys = [], []
        for sid, sp in pts.groupby("sample_id", sort=True):
            sp = sp.reset_index(drop=True)
            take = np.sort(rng.choice(len(sp), size=min(per, len(sp)), replace=False))
            win = (history_windows(data.history_for(sid), len(sp))[take]
                   if self.needs_history else None)
            Xs.append(self._matrix(sp.iloc[take], win))
            ys.append(sp["x_h"].to_numpy(dtype=float)[take])
        return np.vstack(Xs), np.concatenate(ys)

    def _fit_model(self, data: SampleSet, seed: int, overrides: dict | None = None):
        X, y = self._training_rows(data, seed)
        model = _make_model(self.kind, seed, self.n_jobs,
                            {**(self.model_params or {}), **(overrides or {})},
                            wide=self.needs_history)
        model.fit(X, y)
        return model

    def predict(self, points: pd.DataFrame, windows: np.ndarray | None = None) -> np.ndarray:
        X = self._matrix(points, windows)
        if len(X) < 2000 and hasattr(self.model_, "n_jobs"):
            # closed-loop decide() predicts one row at a time; spawning workers for it cost
            # ~30 ms per call with the forest, 30x the prediction itself
            n_jobs, self.model_.n_jobs = self.model_.n_jobs, 1
            try:
                return self.model_.predict(X)
            finally:
                self.model_.n_jobs = n_jobs
        return self.model_.predict(X)

    def _predict_all(self, data: SampleSet) -> np.ndarray:
        if not self.needs_history:
            return self.predict(data.points)
        out = []
        for sid, sp in data.points.groupby("sample_id", sort=True):
            out.append(self.predict(sp, history_windows(data.history_for(sid), len(sp))))
        return np.concatenate(out)

    # ---- interface -------------------------------------------------------------------------
    def fit(self, train: SampleSet, seed: int = 0, final_from: "RegressorPolicy | None" = None):
        """Fit on ``train``; with ``tune_threshold`` the threshold first, by cross-fitting.

        ``final_from``: the same regressor already fitted on the same ``train`` with the same
        seed (the untuned policy of this tuned one, Entry.tunes in the catalogue): its model
        is this one's final model, the very fit ``_fit_model(train, seed)`` would make again.
        """
        self._check()
        self.feature_columns_ = train.feature_columns
        if self.tune_threshold:
            def fit_score(fit_part, held):
                self.model_ = self._fit_model(fit_part, seed, self.tune_model_params)
                return self._predict_all(held)

            blocks = cross_fit(train, self.n_blocks, fit_score, self.c_I, self.c_O)
            grid = DEFAULT_THRESHOLDS if self.thresholds is None else self.thresholds
            self.threshold_, self.gate_, self.threshold_sweep_ = best_threshold(
                blocks, np.asarray(grid, dtype=float), self.c_I, self.c_O)
        else:
            self.threshold_, self.gate_, self.threshold_sweep_ = (
                float(self.threshold), False, None)
        if final_from is not None:
            if (getattr(final_from, "feature_columns_", None) != self.feature_columns_
                    or getattr(final_from, "model_", None) is None):
                raise ValueError("final_from was not fitted on these samples")
            self.model_ = final_from.model_
        else:
            self.model_ = self._fit_model(train, seed)
        return self

    def submit_mask(self, points, windows=None):
        if getattr(self, "model_", None) is None:
            raise RuntimeError(f"{self.name} is not fitted; call fit() first")
        return vetoed(self.predict(points, windows) >= self.threshold_, points, self.gate_)
