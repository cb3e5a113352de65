"""Rule baselines: reactive, the reference's average-wait rule, a fixed lead time, and the
fixed lead vetoed by the scheduler's own plan (what `sbatch --test-only` answers)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.policies.base import Policy
from mirage.outcomes import SampleSet, cost, first_true_grouped


def _running(points: pd.DataFrame) -> np.ndarray:
    return points["pred_running"].to_numpy(dtype=bool)


def _remaining(points: pd.DataFrame) -> np.ndarray:
    # NaN (pending) compares False below, so pending points never trigger a lead rule.
    return points["pred_remaining_h"].to_numpy(dtype=float, na_value=np.nan)


class Reactive(Policy):
    """Submit only when the predecessor has ended (the last point)."""

    name = "reactive"

    def submit_mask(self, points, windows=None):
        return np.zeros(len(points), dtype=bool)


class Average(Policy):
    """Reference baseline: submit once the remaining time drops below the mean queue wait
    of the last 100 started jobs (``f_avg100_wait_h``)."""

    name = "average"

    def __init__(self, column: str = "f_avg100_wait_h"):
        self.column = column

    def submit_mask(self, points, windows=None):
        col = self.column
        if col not in points.columns:
            raise KeyError(f"average policy needs the feature column {col!r}")
        avg = points[col].to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            return _running(points) & (_remaining(points) <= avg)


PLAN_COLUMN = "f_plan_wait_h"


def plan_allows(points: pd.DataFrame) -> np.ndarray:
    """True where the scheduler's plan (``f_plan_wait_h``: running jobs end at their limits,
    every eligible job ranked above holds a reservation) starts a successor submitted now no
    earlier than the predecessor's end; False while the predecessor is pending."""
    if PLAN_COLUMN not in points.columns:
        raise KeyError(f"the plan veto needs the feature column {PLAN_COLUMN!r} "
                       "(`mirage samples` records it); regenerate the samples")
    plan = points[PLAN_COLUMN].to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        return _running(points) & (plan >= _remaining(points))


def vetoed(hit: np.ndarray, points: pd.DataFrame, gate: bool) -> np.ndarray:
    """``hit`` where the plan allows it (``gate``), else ``hit`` unchanged."""
    return hit & plan_allows(points) if gate else hit


def lead_sweep(data: SampleSet, leads_h, c_I: float = 1.0, c_O: float = 0.5,
               allow: np.ndarray | None = None) -> pd.DataFrame:
    """Cost, interruption and overlap of every fixed lead in ``leads_h`` on ``data``; with
    ``allow`` (a boolean per point) a lead submits only where ``allow`` is True.

    One pass per lead over the whole points table; sorting is done once by SampleSet.
    """
    pts = data.points
    running, remaining = _running(pts), _remaining(pts)
    if allow is not None:
        running = running & np.asarray(allow, dtype=bool)
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

    fit() picks the lead with the lowest mean training cost over ``leads`` (None: every 10
    minutes from 0 to 24 h; the leads swept are ``leads_``) into ``lead_h_`` and keeps the whole sweep in ``sweep_`` for the
    cost-vs-lead figure; with tune=False ``lead_h_`` is ``lead_h``. Unfitted, the rule submits
    at ``lead_h`` (the live provisioner runs ``--policy fixed_lead --policy-param lead_h=2``
    without training data).
    """

    name = "fixed_lead"

    def __init__(self, lead_h: float = 1.0, tune: bool = True, leads=None,
                 c_I: float = 1.0, c_O: float = 0.5):
        self.lead_h, self.tune, self.leads, self.c_I, self.c_O = lead_h, tune, leads, c_I, c_O

    @property
    def lead(self) -> float:
        """The lead the rule submits at: the fitted one, or ``lead_h`` before any fit."""
        return float(getattr(self, "lead_h_", self.lead_h))

    def _allow(self, points: pd.DataFrame) -> np.ndarray | None:
        return None  # no veto

    def fit(self, train: SampleSet, seed: int = 0):
        self.leads_ = DEFAULT_LEADS if self.leads is None else np.asarray(self.leads, dtype=float)
        self.sweep_ = lead_sweep(train, self.leads_, self.c_I, self.c_O,
                                 allow=self._allow(train.points))
        self.lead_h_ = float(self.lead_h)
        if self.tune:
            # ties go to the shortest lead: less overlap risk for the same cost
            self.lead_h_ = float(self.sweep_.loc[self.sweep_["cost"].idxmin(), "lead_h"])
        return self

    def submit_mask(self, points, windows=None):
        with np.errstate(invalid="ignore"):
            return _running(points) & (_remaining(points) <= self.lead)


class PlanLead(FixedLead):
    """The fixed lead, vetoed by the scheduler: submit when the running predecessor has at most
    ``lead_h`` hours left *and* ``sbatch --test-only`` (``f_plan_wait_h``) says a successor
    submitted now would not start before the predecessor ends.

    What an HPC user can do without any model: when free nodes would start the successor at
    once, waiting costs nothing yet; when the plan puts its start at or after the end, an
    early submission only adds queue age. fit() tunes the lead on the training cost, as
    FixedLead does, with the veto applied.
    """

    name = "plan_lead"

    def _allow(self, points: pd.DataFrame) -> np.ndarray:
        return plan_allows(points)

    def submit_mask(self, points, windows=None):
        return super().submit_mask(points) & plan_allows(points)
