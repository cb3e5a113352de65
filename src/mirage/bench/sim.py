"""``mirage bench sim``: speed of full replay, single what-if queries and a predecessor sweep.

A benchmark, not a test: it prints figures (and writes JSON with ``--out``); nothing asserts.
All timings are wall-clock on one core, single process.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from mirage import options
from mirage.errors import FetchError, MirageError
from mirage.sim.cluster import ClusterDescription, compat_cluster, load_cluster
from mirage.sim.jobs import JobTable, to_seconds, to_timestamp
from mirage.sim.warmstart import get_static, warm_start
from mirage.sim.whatif import sweep_successor, what_if
from mirage.units import DAY_S, HOUR_S



def bench_replay(table: JobTable, cluster: ClusterDescription, repeat: int = 3) -> dict:
    get_static(table, cluster)  # one-off preparation, not part of a replay
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        sim = warm_start(table, cluster, record=True)
        sim.run_until()
        best = min(best, time.perf_counter() - t)
    return {"jobs": len(table), "seconds": best, "jobs_per_s": len(table) / best}


def bench_whatif(table: JobTable, cluster: ClusterDescription, queries: int = 200, seed: int = 0,
                 nodes: int = 1, limit_min: int = 2880) -> dict:
    """Median time of one what-if from a snapshot; snapshot times drawn uniformly (seeded) over
    the trace after its first start, each probe submitted at the snapshot's time."""
    rng = np.random.default_rng(seed)
    lo, hi = int(table.start.min()), int(table.submit.max())
    times = np.sort(rng.integers(lo, hi, size=queries))
    sim = warm_start(table, cluster, int(times[0]), record=False)
    dts, waits = [], []
    for t in times.tolist():
        sim.run_until(t)
        snap = sim.snapshot()
        t0 = time.perf_counter()
        s = what_if(snap, t, nodes, limit_min)
        dts.append(time.perf_counter() - t0)
        waits.append(np.nan if s is None else (s - t) / HOUR_S)
    dts = np.array(dts)
    waits = np.array(waits)
    loaded = waits > 1.0  # the probe had to queue: the query simulated hours of the cluster
    return {"queries": queries, "median_ms": float(np.median(dts) * 1e3),
            "loaded_queries": int(loaded.sum()),
            "loaded_median_ms": float(np.median(dts[loaded]) * 1e3) if loaded.any() else None,
            "p90_ms": float(np.percentile(dts, 90) * 1e3), "max_ms": float(dts.max() * 1e3),
            "median_probe_wait_h": float(np.nanmedian(waits))}


def bench_sweep(table: JobTable, cluster: ClusterDescription, pred_submits, nodes: int = 1,
                limit_min: int = 2880, warmup_s: int = 2 * DAY_S) -> list[dict]:
    """One predecessor (``nodes``, 48 h, runs to its limit) per submit time, simulated from a warm
    start ``warmup_s`` earlier; time of answering every 10-minute decision point of its life."""
    out = []
    for ps in pred_submits:
        ps = to_seconds(ps)
        base = warm_start(table, cluster, ps - warmup_s, record=False)
        pj = base.insert_job(ps, nodes, limit_min * 60)
        base.run_until(ps)
        t = time.perf_counter()
        pts = sweep_successor(base, pj, nodes=nodes, limit_min=limit_min)
        dt = time.perf_counter() - t
        out.append({"pred_submit": str(to_timestamp(ps)), "queries": len(pts), "seconds": dt,
                    "pred_wait_h": (base.starts.get(pj, ps) - ps) / HOUR_S})
    return out


def run_bench(table: JobTable, cluster: ClusterDescription, *, queries: int = 200,
              sweeps=("2022-12-15T00:00:00", "2023-01-20T00:00:00", "2023-02-10T00:00:00",
                      "2023-03-03T00:00:00", "2023-03-20T00:00:00"),
              seed: int = 0, echo=print) -> dict:
    res: dict = {"cluster": cluster.cluster}
    res["replay"] = bench_replay(table, cluster)
    echo(f"full replay, {cluster.cluster} description: {res['replay']['jobs']} jobs in "
         f"{res['replay']['seconds']:.2f} s = {res['replay']['jobs_per_s']:,.0f} jobs/s")
    res["replay_compat"] = bench_replay(table, compat_cluster(cluster.cluster))
    echo(f"full replay, compat description: {res['replay_compat']['jobs_per_s']:,.0f} jobs/s")
    res["whatif"] = bench_whatif(table, cluster, queries=queries, seed=seed)
    w = res["whatif"]
    echo(f"what-if from a snapshot ({w['queries']} random times, 1 node, 48 h): median "
         f"{w['median_ms']:.2f} ms, p90 {w['p90_ms']:.2f} ms, max {w['max_ms']:.1f} ms; "
         f"median probe wait {w['median_probe_wait_h']:.2f} h")
    if w["loaded_queries"]:
        echo(f"  of which {w['loaded_queries']} with a probe wait over 1 h: median "
             f"{w['loaded_median_ms']:.2f} ms")
    lo, hi = int(table.submit.min()) + 2 * DAY_S, int(table.submit.max()) - 2 * DAY_S
    pts = [s for s in sweeps if lo <= to_seconds(s) <= hi]
    res["sweep"] = bench_sweep(table, cluster, pts)
    for r in res["sweep"]:
        echo(f"predecessor sweep from {r['pred_submit']}: {r['queries']} queries in "
             f"{r['seconds']:.2f} s (predecessor waited {r['pred_wait_h']:.1f} h)")
    if res["sweep"]:
        secs = [r["seconds"] for r in res["sweep"]]
        echo(f"predecessor sweep: median {np.median(secs):.2f} s, max {max(secs):.2f} s")
    return res


def _cluster(args) -> ClusterDescription:
    if args.compat:
        return compat_cluster(args.cluster)
    return load_cluster(args.cluster, args.cluster_file)


def _default_trace() -> str:
    """The real ls6 trace this checkout ships (data/traces/)."""
    from mirage.traces.fetch import bundled_trace

    try:
        return bundled_trace("ls6", Path(__file__).resolve().parents[3])
    except FetchError as e:
        raise MirageError(f"no trace given, and {e}. Or pass --trace PATH") from None


def _bench(args) -> None:
    from mirage.sim.io import load_table

    table = load_table(args.trace or _default_trace(), args.cluster)
    res = run_bench(table, _cluster(args), queries=args.queries, seed=args.seed)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=2))
        print(f"-> {args.out}")


def register_bench(bench_subparsers) -> None:
    """Add ``mirage bench sim``."""
    b = bench_subparsers.add_parser("sim", help="simulator speed: replay, what-if, sweep")
    b.add_argument("--trace", help="trace (default: the real ls6 trace in data/traces/)")
    b.add_argument("--cluster", default="ls6")
    b.add_argument("--cluster-file", help="cluster description YAML (default: config/clusters/<cluster>.yaml)")
    b.add_argument("--compat", action="store_true", help=argparse.SUPPRESS)
    b.add_argument("--queries", type=int, default=200)
    options.add_seed(b)
    b.add_argument("--out", help="also write the figures as JSON")
    b.set_defaults(func=_bench)
