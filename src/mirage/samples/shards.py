"""Sample generation in shards, and gathering the shards into one SampleSet.

Every sample of a cluster gets a stable id from its position in (split, chain size, start)
order; shard i of n takes every n-th sample, so shards cost about the same and a failed shard
reruns alone with identical results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from mirage.outcomes import SampleSet
from mirage.samples.generate import SampleSpec, generate_sample, sample_starts
from mirage.sim import JobTable, compat_cluster, load_cluster

SPLITS = ("train", "validation")


@dataclass(frozen=True)
class Plan:
    cluster: str
    windows: dict  # split -> (start, end)
    every_hours: float
    chain_nodes: tuple[int, ...]
    #: the training window's spacing, where it differs from ``every_hours``
    train_every_hours: float | None = None

    def spacing(self, split: str) -> float:
        """Hours between two sample starts of ``split``."""
        if split == "train" and self.train_every_hours:
            return self.train_every_hours
        return self.every_hours

    def specs(self) -> list[SampleSpec]:
        out = []
        for split in SPLITS:
            start, end = self.windows[split]
            for nodes in self.chain_nodes:
                for t in sample_starts(start, end, every_hours=self.spacing(split)):
                    out.append(SampleSpec(len(out), self.cluster, split, int(nodes), t))
        return out


def cluster_for(cluster: str, mode: str, cluster_file=None):
    """The simulator's cluster description of a mode: ``calibrated`` (config/clusters/<cluster>.yaml,
    or ``cluster_file``: e.g. one fitted by ``mirage sim calibrate``) or ``compat`` (the
    reference's setup: 88 nodes, cold start, age+size priority)."""
    if mode == "compat":
        return compat_cluster(cluster)
    return load_cluster(cluster, cluster_file)


def run_shard(plan: Plan, traces: dict[str, pd.DataFrame], *, shard: int, shards: int, mode: str,
              progress: bool = True, cluster_file=None) -> SampleSet:
    specs = plan.specs()[shard::shards]
    cluster = cluster_for(plan.cluster, mode, cluster_file)
    tables = {split: JobTable.from_frame(df) for split, df in traces.items()}
    results = []
    for spec in tqdm(specs, desc=f"{plan.cluster} {mode} shard {shard}/{shards}", disable=not progress,
                     mininterval=5):
        results.append(generate_sample(tables[spec.split], cluster, spec))
    return _assemble(results)


def _assemble(results: list[dict]) -> SampleSet:
    samples = pd.DataFrame([r["sample"] for r in results])
    if samples.empty:
        samples = pd.DataFrame(columns=["sample_id", "cluster", "split", "chain_nodes", "sample_start",
                                        "pred_submit", "pred_start", "pred_end", "n_points", "reactive_x_h"])
        return SampleSet(samples, pd.DataFrame(columns=["sample_id", "k", "t", "x_h", "pred_running",
                                                        "pred_elapsed_h", "pred_wait_h", "pred_remaining_h"]))
    for col in ("sample_start", "pred_submit", "pred_start", "pred_end"):
        samples[col] = pd.to_datetime(samples[col]).astype("datetime64[s]")
    points = pd.concat([r["points"] for r in results], ignore_index=True)
    hist = [r["history"] for r in results]
    offsets = np.concatenate([[0], np.cumsum([len(h) for h in hist])]).astype(np.int64)
    return SampleSet(samples, points, np.concatenate(hist), offsets, samples["sample_id"].to_numpy())


def gather(directories: list[str | Path]) -> SampleSet:
    """One SampleSet from shard directories (written by ``SampleSet.save``)."""
    parts = [SampleSet.load(d) for d in directories]
    parts = [p for p in parts if len(p)]
    samples = pd.concat([p.samples for p in parts], ignore_index=True)
    points = pd.concat([p.points for p in parts], ignore_index=True)
    ids, hist = [], []
    for p in parts:
        for sid in p.sample_ids:
            ids.append(int(sid))
            hist.append(p.history_for(sid))
    order = np.argsort(ids)
    ids = np.asarray(ids)[order]
    hist = [hist[i] for i in order]
    offsets = np.concatenate([[0], np.cumsum([len(h) for h in hist])]).astype(np.int64)
    return SampleSet(samples, points, np.concatenate(hist), offsets, ids)
