"""The sample tables every policy trains and is evaluated on: the samples stage writes them, the
policies and the evaluation read them (so they live below both).

A :class:`SampleSet` holds three things produced by the sample generator: one row per sample
(``samples``), one row per 10-minute decision point (``points``) with the simulated outcome
``x_h`` of submitting the successor there, and the reference's 144x42 cluster-state history
(``history``), stored once per sample as ``n_points + 143`` rows so that the window of point
``k`` is ``H[k : k + 144]`` without duplicating 143 of every 144 rows.

Points are kept sorted by ``(sample_id, k)``; every vectorised routine below relies on that
order to find sample boundaries with one ``np.flatnonzero`` instead of a groupby.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mirage.errors import MirageError

WINDOW = 144
STATE_WIDTH = 42
PRED_COLUMNS = ("pred_running", "pred_elapsed_h", "pred_wait_h", "pred_remaining_h")
# Columns a causal policy must never see: the outcome itself.
OUTCOME_COLUMNS = ("x_h",)
# A pending predecessor still has its full 48 h limit ahead plus an unknown wait, so 48 h is
# the tightest value known at decision time; it keeps "remaining" monotone for the models.
PENDING_REMAINING_H = 48.0

SAMPLE_COLUMNS = (
    "sample_id", "cluster", "split", "chain_nodes", "sample_start",
    "pred_submit", "pred_start", "pred_end", "n_points",
)
TIME_COLUMNS = ("sample_start", "pred_submit", "pred_start", "pred_end")
POINT_COLUMNS = ("sample_id", "k", "t", "x_h") + PRED_COLUMNS


class SampleSetError(MirageError):
    """A sample table does not follow the data contract (docs/policies.md)."""


def cost(x_h, c_I: float = 1.0, c_O: float = 0.5):
    """Weighted cost of outcome(s) x (hours): c_I * interruption + c_O * overlap."""
    x = np.asarray(x_h, dtype=float)
    return c_I * np.maximum(x, 0.0) + c_O * np.maximum(-x, 0.0)


LOAD_LEVELS = ("low", "medium", "heavy")
ALL = "all"  # the load level of every sample together
#: the project's goals for a learned policy in a cell (mirage report checks them, the figures
#: draw them): at least this share of samples without interruption ...
ZERO_INTERRUPTION_GOAL = 0.80
#: ... with a mean overlap below this many hours
OVERLAP_GOAL_H = 6.0


def load_level(reactive_x_h) -> np.ndarray:
    """Reference load levels by the reactive interruption X: low <= 2 h < medium <= 12 h < heavy."""
    x = np.asarray(reactive_x_h, dtype=float)
    return np.where(x <= 2.0, "low", np.where(x <= 12.0, "medium", "heavy"))


@dataclass
class SampleSet:
    samples: pd.DataFrame
    points: pd.DataFrame
    history: np.ndarray | None = None
    # row offsets into ``history``, aligned with ``history_ids``; len(history_ids) + 1 entries
    history_offsets: np.ndarray | None = None
    history_ids: np.ndarray | None = None
    _hist_pos: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        missing = [c for c in SAMPLE_COLUMNS if c not in self.samples.columns]
        if missing:
            raise SampleSetError(f"samples table lacks columns {missing}")
        missing = [c for c in POINT_COLUMNS if c not in self.points.columns]
        if missing:
            raise SampleSetError(f"points table lacks columns {missing}")
        self.samples = self.samples.sort_values("sample_id").reset_index(drop=True)
        self.points = self.points.sort_values(["sample_id", "k"]).reset_index(drop=True)
        # parquet has no second unit (it comes back as ms); the contract says datetime64[s]
        for frame, cols in ((self.samples, TIME_COLUMNS), (self.points, ("t",))):
            for c in cols:
                if frame[c].dtype != "datetime64[s]":
                    frame[c] = frame[c].astype("datetime64[s]")
        if self.history is not None:
            if self.history_offsets is None or self.history_ids is None:
                raise SampleSetError("history given without offsets and sample ids")
            self._hist_pos = {int(s): i for i, s in enumerate(self.history_ids)}

    # ---- structure -------------------------------------------------------------------------
    @property
    def feature_columns(self) -> list[str]:
        return [c for c in self.points.columns if c.startswith("f_")]

    @property
    def sample_ids(self) -> np.ndarray:
        return self.samples["sample_id"].to_numpy()

    def point_starts(self) -> np.ndarray:
        """Row index of each sample's first point, in sample_id order."""
        sid = self.points["sample_id"].to_numpy()
        return np.concatenate([[0], np.flatnonzero(sid[1:] != sid[:-1]) + 1])

    def validate(self) -> "SampleSet":
        """Check the invariants the policies rely on; raise SampleSetError naming the first."""
        pts = self.points
        counts = pts.groupby("sample_id").size()
        n = self.samples.set_index("sample_id")["n_points"]
        if not counts.reindex(n.index).eq(n).all():
            raise SampleSetError("n_points disagrees with the number of point rows")
        k_ok = pts.groupby("sample_id")["k"].transform(lambda k: k.to_numpy()
                                                       == np.arange(len(k)))
        if not bool(k_ok.all()):
            raise SampleSetError("k must run 0..n_points-1 without gaps in every sample")
        last = pts.groupby("sample_id")["t"].last()
        if not (last.reindex(n.index).to_numpy() == self.samples["pred_end"].to_numpy()).all():
            raise SampleSetError("the last point of a sample must be at pred_end (reactive)")
        if pts["x_h"].isna().any():
            raise SampleSetError("x_h has missing values")
        if self.history is not None:
            for sid, npts in n.items():
                h = self.history_for(sid)
                if h.shape != (npts + WINDOW - 1, STATE_WIDTH):
                    raise SampleSetError(f"history of sample {sid} has shape {h.shape}")
        return self

    # ---- history ---------------------------------------------------------------------------
    def history_for(self, sample_id) -> np.ndarray:
        if self.history is None:
            raise SampleSetError("this SampleSet has no history array")
        i = self._hist_pos[int(sample_id)]
        return self.history[self.history_offsets[i]:self.history_offsets[i + 1]]

    def window(self, sample_id, k: int) -> np.ndarray:
        return self.history_for(sample_id)[k:k + WINDOW]

    # ---- subsets ---------------------------------------------------------------------------
    def subset(self, sample_ids) -> "SampleSet":
        ids = np.asarray(sorted(set(int(s) for s in sample_ids)))
        samples = self.samples[self.samples["sample_id"].isin(ids)]
        points = self.points[self.points["sample_id"].isin(ids)]
        if self.history is None:
            return SampleSet(samples, points)
        parts = [self.history_for(s) for s in ids]
        offsets = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
        hist = np.concatenate(parts) if parts else np.zeros((0, STATE_WIDTH), np.float32)
        return SampleSet(samples, points, hist, offsets, ids)

    def split(self, name: str) -> "SampleSet":
        return self.subset(self.samples.loc[self.samples["split"] == name, "sample_id"])

    def chain(self, nodes: int) -> "SampleSet":
        """The samples of chains of ``nodes`` nodes (``chain_nodes``)."""
        return self.subset(self.samples.loc[self.samples["chain_nodes"] == nodes, "sample_id"])

    def __len__(self) -> int:
        return len(self.samples)

    # ---- persistence -----------------------------------------------------------------------
    def save(self, directory) -> Path:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.samples.to_parquet(d / "samples.parquet", index=False)
        self.points.to_parquet(d / "points.parquet", index=False)
        if self.history is not None:
            np.savez(d / "history.npz", history=self.history.astype(np.float32),
                     offsets=self.history_offsets, sample_ids=self.history_ids)
        return d

    @classmethod
    def load(cls, directory, history: bool = True) -> "SampleSet":
        """The SampleSet saved in ``directory``; ``history=False`` leaves the 144x42 history
        out (for policies that read only the compact features: reading and subsetting its
        hundreds of MB is most of a fit job's start on the real trace)."""
        d = Path(directory)
        for name in ("samples.parquet", "points.parquet"):
            if not (d / name).exists():
                raise SampleSetError(f"{d / name} not found; a SampleSet directory holds "
                                     "samples.parquet, points.parquet and history.npz")
        samples = pd.read_parquet(d / "samples.parquet")
        points = pd.read_parquet(d / "points.parquet")
        if history and (d / "history.npz").exists():
            with np.load(d / "history.npz") as z:
                return cls(samples, points, z["history"], z["offsets"], z["sample_ids"])
        return cls(samples, points)


def history_windows(history: np.ndarray, n_points: int) -> np.ndarray:
    """All n_points windows of one sample as a zero-copy (n_points, 144, 42) view."""
    if history.shape[0] != n_points + WINDOW - 1:
        raise SampleSetError(f"history has {history.shape[0]} rows, expected "
                             f"{n_points + WINDOW - 1} for {n_points} points")
    return np.lib.stride_tricks.sliding_window_view(history, (WINDOW, history.shape[1]))[:, 0]


def compact_matrix(points: pd.DataFrame, feature_columns: list[str]) -> np.ndarray:
    """pred_* and f_* columns as float32, with the pending remaining time filled (see above).

    Other NaNs are left in place for the tree models (which route them) and zeroed by the
    neural policies' scaler.
    """
    cols = list(PRED_COLUMNS) + list(feature_columns)
    missing = [c for c in cols if c not in points.columns]
    if missing:
        raise SampleSetError(f"points lack the feature columns {missing} this policy was "
                             "fitted on")
    X = points[cols].to_numpy(dtype=np.float32, na_value=np.nan)
    rem = X[:, 3]
    X[:, 3] = np.where(np.isnan(rem), PENDING_REMAINING_H, rem)
    return X


def compact_names(feature_columns: list[str]) -> list[str]:
    return list(PRED_COLUMNS) + list(feature_columns)


def first_true(mask: np.ndarray) -> int:
    """k of the first submit in one sample; never submitting means the reactive last point."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else len(mask) - 1


def first_true_grouped(mask: np.ndarray, k: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per-sample first submitting k for points sorted by (sample_id, k)."""
    big = np.iinfo(np.int64).max
    cand = np.where(mask, k.astype(np.int64), big)
    first = np.minimum.reduceat(cand, starts)
    ends = np.concatenate([starts[1:], [len(k)]]) - 1
    return np.where(first == big, k[ends], first).astype(np.int64)


def mask_outcomes(data: SampleSet, mask: np.ndarray) -> np.ndarray:
    """x_h of each sample's first submit under a per-point boolean mask over data.points."""
    pts = data.points
    starts = data.point_starts()
    first = first_true_grouped(np.asarray(mask, dtype=bool), pts["k"].to_numpy(), starts)
    # k is contiguous from 0 (validate()), so the chosen row is start + k
    return pts["x_h"].to_numpy(dtype=float)[starts + first]


def reference_outcomes(data: SampleSet, c_I: float = 1.0, c_O: float = 0.5) -> pd.DataFrame:
    """Per sample: reactive x (the last point) and the oracle's minimum cost."""
    pts = data.points
    starts = data.point_starts()
    ends = np.append(starts[1:], len(pts)) - 1
    x = pts["x_h"].to_numpy(dtype=float)
    ref = pd.DataFrame({"sample_id": pts["sample_id"].to_numpy()[starts],
                        "reactive_x_h": x[ends],
                        "oracle_cost": np.minimum.reduceat(cost(x, c_I, c_O), starts)})
    ref["load_level"] = load_level(ref["reactive_x_h"])
    return ref


def training_samples(directory, chain_nodes: int, *, history: bool = False, at_least: int = 1,
                     purpose: str = "a fit") -> SampleSet:
    """The training samples of chains of ``chain_nodes`` nodes in a run's SampleSet directory
    (``history``: with the 144 x 42 history); an error naming the run's chain sizes when there
    are fewer than ``at_least``."""
    train = SampleSet.load(directory, history=history).split("train")
    mine = train.chain(chain_nodes)
    if len(mine) < at_least:
        sizes = ", ".join(map(str, sorted(set(int(n) for n in train.samples["chain_nodes"]))))
        raise MirageError(f"{directory}: {len(mine)} training samples with chain_nodes="
                          f"{chain_nodes}, too few for {purpose} (at least {at_least}). Fix: a "
                          f"chain size of the run's samples ({sizes or 'none'}; "
                          "samples.chain_nodes) or a longer training window in the config")
    return mine
