"""The twin for the live provisioner: fitted at start from the cluster's trace, with the
cluster's description it simulates the live queue's drawn futures in."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mirage.sim.cluster import load_cluster
from mirage.twin.policy import TwinPolicy, TwinPolicyError
from mirage.twin.world import with_inferred_dependencies


def load_twin(params: dict | None = None, seed: int = 0) -> TwinPolicy:
    """The twin policy fitted for the live side, ready to decide (:meth:`TwinPolicy.decide`).
    ``params``: ``trace`` (a raw trace or clean .parquet table of the cluster: the runtimes and
    arrivals the twin draws from), ``cluster`` (a description name of config/clusters, or a
    YAML path; it simulates the drawn futures), ``seed``, and any TwinPolicy setting (K, rule,
    horizon_h, ...)."""
    params = dict(params or {})
    trace, cluster = params.pop("trace", None), params.pop("cluster", None)
    seed = int(params.pop("seed", seed))
    if not trace or not cluster:
        raise TwinPolicyError("policy twin needs the cluster's trace and description. Fix: add "
                              "--policy-param trace=TRACE (raw or clean .parquet) and "
                              "--policy-param cluster=NAME|FILE.yaml")
    path = Path(str(cluster))
    desc = load_cluster(path.stem, path) if path.suffix in (".yaml", ".yml") else load_cluster(str(cluster))
    tpath = Path(str(trace))
    if not tpath.is_file():
        raise TwinPolicyError(f"{tpath}: no such trace. Fix: pass an existing trace file or clean table")
    if tpath.suffix == ".parquet":
        jobs = pd.read_parquet(tpath)
    else:
        from mirage.traces.clean import clean_trace

        jobs = clean_trace(tpath, cluster=desc.cluster)[0]
    return TwinPolicy(**params).fit(trace=with_inferred_dependencies(jobs, desc), seed=seed,
                                    cluster=desc)
