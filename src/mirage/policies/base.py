"""The one interface every provisioning policy implements.

A policy answers "submit the successor now?" at one decision point (:meth:`Policy.decide`,
usable closed-loop inside a simulator) and, for table evaluation, "at which point k would you
first submit?" (:meth:`Policy.first_submit`). All policies here are memoryless given the
observation, so both answers come from one vectorised :meth:`Policy.submit_mask`; that makes
first_submit agree with looping decide() by construction and lets evaluation score a whole
split with one model call instead of one call per point.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import joblib
import numpy as np
import pandas as pd

from mirage.outcomes import (
    OUTCOME_COLUMNS, SampleSet, first_true, first_true_grouped, history_windows,
)


@dataclass(frozen=True)
class Observation:
    """What a policy may know at one decision point.

    ``row`` holds the point's pred_* and f_* values (and sample_id, k, t); the outcome x_h is
    stripped so a causal policy cannot read it by accident. ``history`` is the 144x42 window
    ending at the point, for policies that need it. ``sample_points`` is the whole sample
    table including outcomes and exists only for the oracle.
    """

    row: Mapping[str, Any]
    history: np.ndarray | None = None
    sample_points: pd.DataFrame | None = None

    @classmethod
    def from_points(cls, points: pd.DataFrame, i: int, history: np.ndarray | None = None,
                    with_outcomes: bool = False) -> "Observation":
        row = points.iloc[i].drop(labels=[c for c in OUTCOME_COLUMNS if c in points.columns])
        window = None
        if history is not None:
            window = history_windows(history, len(points))[i]
        return cls(row.to_dict(), window, points if with_outcomes else None)


class derived_name:
    """A policy class's ``name`` computed from the instance's parameters (``rf_tuned`` from
    ``kind`` and ``tune_threshold``). A non-data descriptor: a name set on the instance
    (``make_policy`` sets the registered one) takes precedence."""

    def __init__(self, fget):
        self.fget = fget

    def __get__(self, obj, owner=None):
        return self if obj is None else self.fget(obj)


class Policy:
    """A provisioning policy, following scikit-learn's estimator conventions: every constructor
    argument is kept unchanged as an attribute of the same name (checked and derived in fit(),
    never in ``__init__``), ``get_params`` / ``set_params`` read and set them (so
    ``sklearn.base.clone`` makes an unfitted copy), and what fit() learns ends in ``_``."""

    name: str = "policy"
    needs_history: bool = False

    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's keyword parameters, as scikit-learn's BaseEstimator reads them."""
        if cls.__init__ is object.__init__:
            return []
        params = inspect.signature(cls.__init__).parameters.values()
        return sorted(p.name for p in params if p.name != "self"
                      and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def get_params(self, deep: bool = False) -> dict:
        """The constructor arguments by name (``deep`` is accepted for scikit-learn; no policy
        nests estimators)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params) -> "Policy":
        """Set constructor arguments by name; an unknown name raises, naming the known ones."""
        known = self._param_names()
        for key, value in params.items():
            if key not in known:
                raise ValueError(f"{type(self).__name__} has no parameter {key!r}; "
                                 f"its parameters are {known}")
            setattr(self, key, value)
        return self

    def fit(self, train: SampleSet, seed: int = 0) -> "Policy":
        return self

    # Vectorised core: one boolean per row of ``points`` (rows may span several samples).
    # ``windows`` is (len(points), 144, 42) when needs_history, else None.
    def submit_mask(self, points: pd.DataFrame, windows: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    def decide(self, obs: Observation) -> bool:
        frame = pd.DataFrame([dict(obs.row)])
        win = obs.history[None] if (self.needs_history and obs.history is not None) else None
        if self.needs_history and win is None:
            raise ValueError(f"policy {self.name} needs the 144x42 history window")
        return bool(self.submit_mask(frame, win)[0])

    def first_submit(self, sample_points: pd.DataFrame, history: np.ndarray | None = None) -> int:
        sample_points = sample_points.sort_values("k").reset_index(drop=True)
        windows = None
        if self.needs_history:
            if history is None:
                raise ValueError(f"policy {self.name} needs the sample's history array")
            windows = history_windows(history, len(sample_points))
        return first_true(np.asarray(self.submit_mask(sample_points, windows), dtype=bool))

    def first_submit_all(self, data: SampleSet) -> pd.Series:
        """k of the first submit for every sample of ``data``, indexed by sample_id."""
        if self.needs_history:
            ks = {}
            for sid, pts in data.points.groupby("sample_id", sort=True):
                ks[sid] = self.first_submit(pts, data.history_for(sid))
            return pd.Series(ks, name="k", dtype="int64").rename_axis("sample_id")
        pts = data.points
        mask = np.asarray(self.submit_mask(pts, None), dtype=bool)
        starts = data.point_starts()
        ks = first_true_grouped(mask, pts["k"].to_numpy(), starts)
        return pd.Series(ks, index=pts["sample_id"].to_numpy()[starts], name="k").rename_axis(
            "sample_id")

    # ---- persistence: joblib by default; torch policies override with state_dicts ---------
    def save(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        joblib.dump(self, path)
        return path

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def first_submit_by_decide(policy: Policy, sample_points: pd.DataFrame,
                           history: np.ndarray | None = None) -> int:
    """Reference semantics of first_submit: ask decide() point by point, as a simulator would."""
    sample_points = sample_points.sort_values("k").reset_index(drop=True)
    for i in range(len(sample_points)):
        obs = Observation.from_points(sample_points, i, history, with_outcomes=True)
        if i == len(sample_points) - 1 or policy.decide(obs):
            return i
    raise AssertionError("unreachable: the last point always submits")
