"""Decisions made by replaying each sample's episode, stored for the table evaluation.

The twin (mirage.twin.policy; kind ``replayed`` in mirage.policies.catalogue) decides from
the queue a user sees, which the sample tables do not hold, so its first submit on a sample is
found by re-running that sample's episode and asking it at every point
(mirage.twin.replay.run_twin). :class:`ReplayedDecisions` keeps those first submits per sample
and answers :meth:`first_submit_all` from them, so `mirage evaluate` scores the twin like every
other policy, on the same samples and outcomes, with the same paired intervals. It decides
nothing itself: a sample it holds no decision for is an error that names the fix, never a
silent reactive default.
"""

from __future__ import annotations

import pandas as pd

from mirage.errors import MirageError
from mirage.outcomes import SampleSet
from mirage.policies.base import Policy

class ReplayedDecisionsError(MirageError):
    """Decisions asked for a sample that was not replayed."""


class ReplayedDecisions(Policy):
    """The first submit ``k`` per sample of a policy evaluated by replay.

    ``policy``: the replayed policy's name; ``params``: its parameters (kept for fits.csv and
    repr). :meth:`fit` takes the decisions (a frame with ``sample_id`` and ``k``); fitted
    attributes: ``decisions_`` (k indexed by sample_id) and ``info_`` (what the replay
    measured: seconds, decision times).
    """

    def __init__(self, policy: str = "twin", params: dict | None = None):
        self.policy = policy
        self.params = dict(params or {})
        self.name = policy

    def get_params(self) -> dict:
        return {"policy": self.policy, "params": dict(self.params)}

    def fit(self, decisions: pd.DataFrame, seed: int = 0, info: dict | None = None) -> "ReplayedDecisions":
        if not {"sample_id", "k"} <= set(decisions.columns):
            raise ReplayedDecisionsError("replayed decisions need the columns sample_id and k")
        if decisions["sample_id"].duplicated().any():
            raise ReplayedDecisionsError("replayed decisions hold a sample twice")
        self.decisions_ = (decisions.set_index("sample_id")["k"].astype("int64")
                           .rename("k").rename_axis("sample_id").sort_index())
        self.info_ = dict(info or {})
        return self

    def first_submit_all(self, data: SampleSet) -> pd.Series:
        if getattr(self, "decisions_", None) is None:
            raise ReplayedDecisionsError(f"{self.name}: no decisions; call fit() first")
        ids = pd.Index(data.sample_ids)
        missing = ids.difference(self.decisions_.index)
        if len(missing):
            raise ReplayedDecisionsError(
                f"{self.name}: no replayed decision for {len(missing)} of {len(ids)} samples "
                f"(e.g. {list(missing[:5])}). Fix: replay it on these samples "
                "(`mirage samples twin --policy NAME`, the workflow's decide_twin rule)")
        return self.decisions_.reindex(ids).rename_axis("sample_id")

    def submit_mask(self, points, windows=None):
        raise ReplayedDecisionsError(
            f"{self.name} decides by replay; its point-by-point mask is not stored. "
            "Fix: use first_submit_all (what mirage evaluate calls)")


__all__ = ["ReplayedDecisions", "ReplayedDecisionsError"]
