"""Gymnasium environment backed by the sample tables.

An episode is one sample. The observation at step k is the standardised compact feature vector
of point k; action 1 submits (terminal, reward -cost(x_k)), action 0 waits (reward 0) and moves
``stride`` points on. Waiting into the last point (the predecessor has ended) ends the episode
at once with the reactive outcome -cost(x_last): that submit is forced, not a decision, and an
observation there would carry a Q(s, wait) that no transition ever trains but that the
bootstrap target of the step before would still take a max over. Because every point's x_k was simulated beforehand, an episode costs
array lookups only, so the RL policies train on the same tables the others are scored on.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from mirage.outcomes import SampleSet, compact_matrix, cost


@dataclass
class Scaler:
    """Standardisation fitted on training points; NaN becomes the mean (0 after scaling)."""

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray) -> "Scaler":
        mean = np.nan_to_num(np.nanmean(X, axis=0)) if len(X) else np.zeros(X.shape[1])
        std = np.nan_to_num(np.nanstd(X, axis=0)) if len(X) else np.ones(X.shape[1])
        # constant columns (e.g. chain_nodes-like flags in one cluster) must not divide by 0
        std = np.where(std > 1e-8, std, 1.0)
        return cls(mean.astype(np.float32), std.astype(np.float32))

    def transform(self, X: np.ndarray) -> np.ndarray:
        Z = (np.asarray(X, dtype=np.float32) - self.mean) / self.std
        return np.nan_to_num(Z, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)


def decisions(n_points, stride: int) -> np.ndarray:
    """The decisions of episodes of ``n_points`` points each that wait to their end: one every
    ``stride`` points from the first (points 0, stride, 2 stride, ... up to the last)."""
    return (np.asarray(n_points) - 1) // int(stride) + 1


class TableEpisodes:
    """Flat arrays of a SampleSet: standardised features, outcomes and sample boundaries."""

    def __init__(self, data: SampleSet, feature_columns: list[str], scaler: Scaler,
                 c_I: float = 1.0, c_O: float = 0.5):
        pts = data.points
        self.X = scaler.transform(compact_matrix(pts, feature_columns))
        self.x = pts["x_h"].to_numpy(dtype=np.float64)
        self.cost = cost(self.x, c_I, c_O)
        self.starts = data.point_starts()
        self.n = np.diff(np.append(self.starts, len(pts)))
        self.n_samples = len(self.starts)
        self.obs_dim = self.X.shape[1]

    def decisions(self, stride: int) -> np.ndarray:
        """Each episode's decisions when it waits to its end (``decisions``)."""
        return decisions(self.n, stride)


class ProvisioningEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, episodes: TableEpisodes, stride: int = 1):
        self.ep = episodes
        self.stride = int(stride)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (episodes.obs_dim,),
                                                np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._i = 0
        self._k = 0

    def _obs(self):
        return self.ep.X[self.ep.starts[self._i] + self._k]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if options and "sample_index" in options:
            self._i = int(options["sample_index"])
        else:
            self._i = int(self.np_random.integers(self.ep.n_samples))
        self._k = 0
        return self._obs(), {"sample_index": self._i, "k": 0}

    @property
    def steps_left(self) -> int:
        """Decisions left including this one (for exploration that stops uniformly)."""
        return max(1, -(-(self.ep.n[self._i] - 1 - self._k) // self.stride))

    def submit_reward(self) -> float:
        """Reward submitting now would get: the table knows it even when the agent waits."""
        return -float(self.ep.cost[self.ep.starts[self._i] + self._k])

    def step(self, action):
        last = self.ep.n[self._i] - 1
        if int(action) != 1 and self._k < last:
            self._k = min(self._k + self.stride, last)
            if self._k < last:
                return self._obs(), 0.0, False, False, {"k": self._k}
        row = self.ep.starts[self._i] + self._k
        info = {"k": self._k, "x_h": float(self.ep.x[row]), "forced": self._k == last}
        return self._obs(), -float(self.ep.cost[row]), True, False, info
