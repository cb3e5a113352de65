"""``mirage bench samples``: how long all of a trace's samples take, and how long the RL
policies take to train on them. A benchmark, not a test: it prints figures and asserts nothing.

Samples are generated in ``--workers`` processes (one shard each), as the workflow's sharded
rules would on the same cores; training runs single-threaded per policy, as the fit rule does.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from mirage import options
from mirage.traces.fetch import bundled_trace

LS6_WINDOWS = {"train": ("2022-11-01", "2023-02-28"), "validation": ("2023-03-01", "2023-03-31")}


def _shard(args):
    from mirage.samples.shards import run_shard

    plan, traces, shard, shards, mode = args
    t0 = time.perf_counter()
    data = run_shard(plan, traces, shard=shard, shards=shards, mode=mode, progress=False)
    return data, time.perf_counter() - t0


def bench_samples(trace, cluster: str, windows: dict, *, every_hours: float, chain_nodes, workers: int,
                  mode: str = "calibrated", train_policies=("dqn", "pg")) -> dict:
    from mirage.outcomes import SampleSet
    from mirage.policies.registry import make_policy
    from mirage.samples.shards import Plan
    from mirage.traces.clean import clean_trace
    from mirage.traces.split import split_window

    jobs, _, _ = clean_trace(trace, cluster=cluster)
    traces = {s: split_window(jobs, *windows[s], history_hours=72, horizon_hours=120) for s in windows}
    plan = Plan(cluster, windows, every_hours, tuple(chain_nodes))
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        parts = list(pool.map(_shard, [(plan, traces, i, workers, mode) for i in range(workers)]))
    wall = time.perf_counter() - t0
    sets = [p[0] for p in parts]
    data = SampleSet(
        pd.concat([s.samples for s in sets], ignore_index=True),
        pd.concat([s.points for s in sets], ignore_index=True),
    )
    out = {
        "cluster": cluster, "mode": mode, "samples": len(data), "decision_points": len(data.points),
        "workers": workers, "wall_s": round(wall, 1), "samples_per_s": round(len(data) / wall, 2),
        "shard_s": [round(p[1], 1) for p in parts], "training": [],
    }
    train = data.split("train")
    for nodes in chain_nodes:
        part = train.subset(train.samples.loc[train.samples["chain_nodes"] == nodes, "sample_id"])
        for name in train_policies:
            t = time.perf_counter()
            make_policy(name).fit(part, seed=0)
            out["training"].append({"policy": name, "chain_nodes": nodes, "samples": len(part),
                                    "seconds": round(time.perf_counter() - t, 1)})
    return out


def _bench(args) -> None:
    trace = Path(args.trace or bundled_trace("ls6", Path(__file__).resolve().parents[3]))
    res = bench_samples(trace, args.cluster, LS6_WINDOWS, every_hours=args.every_hours,
                        chain_nodes=args.chain_nodes, workers=args.workers, mode=args.mode,
                        train_policies=args.train)
    print(f"{res['cluster']} ({res['mode']}): {res['samples']} samples, {res['decision_points']} decision "
          f"points in {res['wall_s']} s on {res['workers']} workers ({res['samples_per_s']} samples/s)")
    for t in res["training"]:
        print(f"  train {t['policy']} n={t['chain_nodes']}: {t['seconds']} s on {t['samples']} samples")
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=2) + "\n")


def register_bench(bsub) -> None:
    b = bsub.add_parser("samples", help="time all samples of a trace and RL training on them")
    b.add_argument("--trace", help="default: the real ls6 trace in data/traces/ (the paper's ls6 "
                   "windows)")
    b.add_argument("--cluster", default="ls6")
    b.add_argument("--every-hours", type=float, default=4.0)
    options.add_chain_nodes(b, many=True, default=[1, 8])
    b.add_argument("--workers", type=int, default=2)
    b.add_argument("--mode", choices=["calibrated", "compat"], default="calibrated")
    b.add_argument("--train", nargs="*", default=["dqn", "pg"], help="policies whose training is timed")
    b.add_argument("--out", help="also write the figures as JSON")
    b.set_defaults(func=_bench)
