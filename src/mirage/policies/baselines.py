"""Rule baselines: reactive, the reference's average-wait rule, and a fixed lead time."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.policies.base import Policy
from mirage.policies.data import SampleSet, cost, first_true_grouped


def _running(points: pd.DataFrame) -> np.ndarray:
    return points["pred_running"].to_numpy(dtype=bool)


def _remaining(points: pd.DataFrame) -> np.ndarray:
    # NaN (pending) compares False below, so pending points never trigger a lead rule.
    return points["pred_remaining_h"].to_numpy(dtype=float, na_value=np.nan)


class Reactive(Policy):
    """Submit only when the predecessor has ended (the last point)."""

    name = "reactive"

    def __init__(self):
        self.params = {}

    def submit_mask(self, points, windows=None):
        return np.zeros(len(points), dtype=bool)


class Average(Policy):
    """Reference baseline: submit once the remaining time drops below the mean queue wait
    of the last 100 started jobs (``f_avg100_wait_h``)."""

    name = "average"

    def __init__(self, column: str = "f_avg100_wait_h"):
        self.params = {"column": column}

    def submit_mask(self, points, windows=None):
        col = self.params["column"]
        if col not in points.columns:
            raise KeyError(f"average policy needs the feature column {col!r}")
        avg = points[col].to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            return _running(points) & (_remaining(points) <= avg)


def lead_sweep(data: SampleSet, leads_h, c_I: float = 1.0, c_O: float = 0.5) -> pd.DataFrame:
    """Cost, interruption and overlap of every fixed lead in ``leads_h`` on ``data``.

    One pass per lead over the whole points table; sorting is done once by SampleSet.
    """
    pts = data.points
    running, remaining = _running(pts), _remaining(pts)
    k, x = pts["k"].to_numpy(), pts["x_h"].to_numpy(dtype=float)
    starts = data.point_starts()
    rows = []
    for lead in np.asarray(leads_h, dtype=float):
        with np.errstate(invalid="ignore"):
            mask = running & (remaining <= lead)
        first = first_true_grouped(mask, k, starts)
        xs = x[starts + first]  # k is 0-based and contiguous, so row = start + k
        rows.append({"lead_h": lead, "cost": cost(xs, c_I, c_O).mean(),
                     "mean_interruption_h": np.maximum(xs, 0).mean(),
                     "mean_overlap_h": np.maximum(-xs, 0).mean(),
                     "zero_interruption_share": (xs <= 0).mean()})
    return pd.DataFrame(rows)


DEFAULT_LEADS = np.round(np.arange(0.0, 24.0 + 1e-9, 1.0 / 6.0), 4)


class FixedLead(Policy):
    """Submit when the running predecessor has at most ``lead_h`` hours left.

    fit() picks the lead with the lowest mean training cost over ``leads`` and keeps the
    whole sweep in ``sweep_`` for the cost-vs-lead figure; with tune=False it keeps lead_h.
    """

    name = "fixed_lead"

    def __init__(self, lead_h: float = 1.0, tune: bool = True, leads=None,
                 c_I: float = 1.0, c_O: float = 0.5):
        self.params = {"lead_h": lead_h, "tune": tune, "c_I": c_I, "c_O": c_O}
        self.leads = DEFAULT_LEADS if leads is None else np.asarray(leads, dtype=float)
        self.lead_h = float(lead_h)
        self.sweep_: pd.DataFrame | None = None

    def fit(self, train: SampleSet, seed: int = 0):
        self.sweep_ = lead_sweep(train, self.leads, self.params["c_I"], self.params["c_O"])
        if self.params["tune"]:
            # ties go to the shortest lead: less overlap risk for the same cost
            self.lead_h = float(self.sweep_.loc[self.sweep_["cost"].idxmin(), "lead_h"])
        return self

    def submit_mask(self, points, windows=None):
        with np.errstate(invalid="ignore"):
            return _running(points) & (_remaining(points) <= self.lead_h)
