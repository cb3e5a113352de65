"""Oracle: the cost-minimising submit point of each sample, known from every point's x_h.

It is the lower bound for every policy that submits at one of the same decision points. The
simulator re-runs the queue for every point's x_h, so the bound accounts for the successor
changing the queue (the trace alone could not give it). Ties go to the earliest point.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.policies.base import Observation, Policy
from mirage.outcomes import SampleSet, cost


class Oracle(Policy):
    name = "oracle"

    def __init__(self, c_I: float = 1.0, c_O: float = 0.5):
        self.c_I, self.c_O = c_I, c_O

    def _best_k(self, sample_points: pd.DataFrame) -> int:
        sp = sample_points.sort_values("k")
        c = cost(sp["x_h"].to_numpy(dtype=float), self.c_I, self.c_O)
        return int(sp["k"].to_numpy()[int(np.argmin(c))])

    def submit_mask(self, points, windows=None):
        if "x_h" not in points.columns:
            raise ValueError("the oracle needs x_h of every point of the sample")
        best = points.groupby("sample_id")[["k", "x_h"]].apply(self._best_k)
        return points["k"].to_numpy() == best.reindex(points["sample_id"]).to_numpy()

    def decide(self, obs: Observation) -> bool:
        if obs.sample_points is None:
            raise ValueError("the oracle decides only with Observation.sample_points "
                             "(the whole sample table with outcomes)")
        return int(obs.row["k"]) == self._best_k(obs.sample_points)

    def first_submit(self, sample_points, history=None) -> int:
        return self._best_k(sample_points)

    def first_submit_all(self, data: SampleSet) -> pd.Series:
        pts = data.points
        c = cost(pts["x_h"].to_numpy(dtype=float), self.c_I, self.c_O)
        starts = data.point_starts()
        # argmin per segment: the minimum per sample, then the first row reaching it
        mins = np.minimum.reduceat(c, starts)
        seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(c))))
        hit = np.flatnonzero(c == mins[seg])
        first_rows = hit[np.unique(seg[hit], return_index=True)[1]]
        return pd.Series(pts["k"].to_numpy()[first_rows],
                         index=pts["sample_id"].to_numpy()[starts], name="k").rename_axis(
            "sample_id")
