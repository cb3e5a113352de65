"""Evaluating the twin policy on a sample set: each sample's episode re-run, the twin asked at
each decision point with the queue the simulation shows there.

The sample tables hold aggregates only (mirage.outcomes), not the queue the twin reads, so each
sample's :class:`~mirage.samples.generate.Episode` is re-run on the same split trace and cluster
description (a fraction of a second per sample) and checked against the stored points (same t
and k at every point, same features), which catches a wrong trace, mode or cluster file. The
twin stops the episode at its first submit; the outcome is the stored x_h of that point (the
table semantics, which tests/samples/test_closed_loop.py ties to the closed loop).
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from mirage.errors import MirageError
from mirage.outcomes import SampleSet
from mirage.samples.generate import Episode, SampleSpec
from mirage.sim import JobTable
from mirage.sim import twin as engine
from mirage.sim.twin import true_future, view_from_sim


class TwinEvalError(MirageError):
    """The re-run episode does not match the stored sample."""


def spec_of(sample: pd.Series | dict) -> SampleSpec:
    return SampleSpec(int(sample["sample_id"]), str(sample["cluster"]), str(sample["split"]),
                      int(sample["chain_nodes"]), pd.Timestamp(sample["sample_start"]))


def _check_point(spec: SampleSpec, row: dict, stored: pd.Series | None, check_features: bool) -> None:
    if stored is None:
        raise TwinEvalError(f"sample {spec.sample_id}: the episode has point k={row['k']}, the "
                            "stored sample has fewer. Fix: pass the trace, cluster and mode the "
                            "samples were generated with")
    if pd.Timestamp(row["t"]) != pd.Timestamp(stored["t"]):
        raise TwinEvalError(f"sample {spec.sample_id} point {row['k']}: episode t {row['t']} != "
                            f"stored t {stored['t']}. Fix: pass the trace, cluster and mode the "
                            "samples were generated with")
    if check_features:
        cols = [c for c in row if (c.startswith("f_") or c.startswith("pred_")) and c in stored.index]
        a = np.array([row[c] for c in cols], dtype=np.float64)
        b = stored[cols].to_numpy(dtype=np.float64, na_value=np.nan)
        if not np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
            bad = [c for c, x, y in zip(cols, a, b) if not np.isclose(x, y, rtol=1e-5, atol=1e-6,
                                                                    equal_nan=True)]
            raise TwinEvalError(f"sample {spec.sample_id} point {row['k']}: features {bad} differ "
                                "from the stored point. Fix: pass the trace, cluster and mode the "
                                "samples were generated with")


def run_twin_episode(policy, table: JobTable, cluster, spec: SampleSpec,
                     points: pd.DataFrame | None = None, *, check_features: bool = True,
                     simulate=None, truth: str | None = None) -> tuple[int, list[dict]]:
    """``(k, timing rows)``: the decision point of the twin's first submit in ``spec``'s episode
    (the last point, the reactive one, when it never submits), and one row per point asked.
    ``points``: the stored points of the sample, checked point by point (None: no check).
    ``truth`` (an ablation, mirage.sim.twin.TRUTHS): the trace's runtimes and/or arrivals replace
    the policy's draws in every simulated future."""
    ep = Episode(table, cluster, spec)
    if simulate is None:
        simulate = partial(getattr(engine, policy.engine_call), cluster=cluster)
    if truth is not None:
        horizon_s = int(round(float(policy.params["horizon_h"]) * 3600))
        drawn_simulate = simulate

        def simulate(view, future, **kw):
            return drawn_simulate(view, true_future(ep.sim, view, future, truth, horizon_s), **kw)
    stored = None if points is None else points.sort_values("k").set_index("k", drop=False)
    timing = []
    for t, row in ep:
        k = int(row["k"])
        if stored is not None:
            _check_point(spec, row, stored.loc[k] if k in stored.index else None, check_features)
        start = ep.pred_start()
        if start >= 0 and t >= start + ep.limit_s:  # the predecessor's end submits regardless
            if stored is not None and k != int(stored["k"].iloc[-1]):
                raise TwinEvalError(f"sample {spec.sample_id}: the episode ends at k={k}, the "
                                    f"stored sample at k={int(stored['k'].iloc[-1])}")
            timing.append({"sample_id": spec.sample_id, "k": k, "draws": 0, "seconds": 0.0,
                           "n_running": np.nan, "n_pending": np.nan, "submit": True,
                           "reactive": True})
            return k, timing
        t0 = time.perf_counter()
        view = view_from_sim(ep.sim, t, pred_jid=ep.pred, pred_submit=ep.t_pred,
                             pred_limit_s=ep.limit_s, chain_nodes=spec.chain_nodes)
        submit, x = policy.evaluate(view, simulate)
        timing.append({"sample_id": spec.sample_id, "k": k, "draws": int((~np.isnan(np.reshape(x, (len(x), -1))[:, 0])).sum()),
                       "seconds": time.perf_counter() - t0, "n_running": view.n_running,
                       "n_pending": view.n_pending, "submit": bool(submit), "reactive": False})
        if submit:
            return k, timing
    raise AssertionError("unreachable: the predecessor's end always submits")


def run_twin(policy, data: SampleSet, table: JobTable, cluster, *, sample_ids=None,
             check_features: bool = True, truth: str | None = None,
             progress=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The twin's first submit on every sample of ``data`` (or ``sample_ids``): a frame
    ``sample_id, k, x_h, n_points, reactive_x_h`` (x_h: the stored outcome of that point), and
    the timing frame (one row per decision point asked: draws simulated, seconds).
    ``progress(done, total, row)``: called after each sample with its result row."""
    samples = data.samples.set_index("sample_id", drop=False)
    ids = samples.index if sample_ids is None else pd.Index(sample_ids)
    by_sample = dict(tuple(data.points.groupby("sample_id", sort=False)))
    rows, timing = [], []
    for sid in ids:
        sample = samples.loc[sid]
        pts = by_sample[sid].sort_values("k").reset_index(drop=True)
        k, tim = run_twin_episode(policy, table, cluster, spec_of(sample), pts,
                                  check_features=check_features, truth=truth)
        timing.extend(tim)
        rows.append({"sample_id": int(sid), "k": k, "x_h": float(pts["x_h"].iloc[k]),
                     "n_points": len(pts), "reactive_x_h": float(pts["x_h"].iloc[-1])})
        if progress is not None:
            progress(len(rows), len(ids), rows[-1])
    return pd.DataFrame(rows), pd.DataFrame(timing)


def validation_ids(data: SampleSet, chain_nodes: int, every: int = 1) -> list[int]:
    """The validation samples of ``chain_nodes`` in time order (every ``every``-th one)."""
    s = data.samples
    val = s.loc[(s["split"] == "validation") & (s["chain_nodes"] == chain_nodes)]
    return val.sort_values(["sample_start", "sample_id"])["sample_id"].tolist()[::every]


def print_progress(label: str):
    """A ``progress`` callback for :func:`run_twin`: one line per tenth of the samples."""
    t0 = time.perf_counter()

    def progress(done, total, row):
        if done == total or done % max(1, total // 10) == 0:
            print(f"{label}: {done}/{total} samples, {time.perf_counter() - t0:.0f} s", flush=True)

    return progress


def replay_twin(train: pd.DataFrame, validation: pd.DataFrame, data: SampleSet, cluster, *,
                chain_nodes: int, seed: int = 0, params: dict | None = None, c_I: float = 1.0,
                c_O: float = 0.5, progress=None):
    """The twin fitted on the training split's jobs (``train``, canonical; dependencies
    inferred where ``cluster`` infers them) and replayed on every validation sample of
    ``chain_nodes`` in ``data``: a fitted
    :class:`~mirage.policies.replayed.ReplayedDecisions` (what `mirage evaluate` scores) and
    the timing frame of :func:`run_twin`."""
    from mirage.policies.replayed import ReplayedDecisions
    from mirage.policies.twin import TwinPolicy
    from mirage.sim.twin import with_inferred_dependencies

    ids = validation_ids(data, chain_nodes)
    if not ids:
        raise TwinEvalError(f"no validation samples with chain_nodes={chain_nodes}. Fix: pass "
                            "the run's samples and one of its chain sizes")
    t0 = time.perf_counter()
    policy = TwinPolicy(**{"c_I": c_I, "c_O": c_O, **(params or {})})
    policy.fit(trace=with_inferred_dependencies(train, cluster), seed=seed)
    fit_s = time.perf_counter() - t0
    res, timing = run_twin(policy, data, JobTable.from_frame(validation), cluster,
                           sample_ids=ids, progress=progress)
    asked = timing[timing["draws"] > 0] if len(timing) else timing
    info = {"fit_seconds": round(fit_s, 2), "decide_seconds": round(time.perf_counter() - t0 - fit_s, 2),
            "decisions_asked": int(len(asked)),
            "median_decision_s": float(asked["seconds"].median()) if len(asked) else 0.0,
            "validation_samples": len(ids)}
    out = ReplayedDecisions("twin", policy.get_params()).fit(res[["sample_id", "k"]], seed, info)
    return out, timing


def decide_cmd(args) -> None:
    """`mirage samples twin` (mirage.samples.cli)."""
    import json

    from mirage.samples.shards import cluster_for

    out = Path(args.out)
    trace = Path(args.trace_dir)
    for f in (trace / "train.parquet", trace / "validation.parquet", Path(args.samples)):
        if not f.exists():
            raise MirageError(f"{f}: missing. Fix: pass the run's trace split directory "
                              "(results/<run>/<cluster>/trace) and its samples")
    params = json.loads(args.params)
    desc = cluster_for(args.cluster, args.mode, args.cluster_file)
    data = SampleSet.load(args.samples)
    progress = print_progress(f"twin {args.mode} n={args.chain_nodes}")
    policy, timing = replay_twin(pd.read_parquet(trace / "train.parquet"),
                                 pd.read_parquet(trace / "validation.parquet"), data, desc,
                                 chain_nodes=args.chain_nodes, seed=args.seed, params=params,
                                 c_I=args.c_I, c_O=args.c_O, progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    model = policy.save(out / "model.joblib")
    timing.to_csv(out / "timing.csv", index=False)
    train_ids = data.samples.loc[(data.samples["split"] == "train")
                                 & (data.samples["chain_nodes"] == args.chain_nodes), "sample_id"]
    info = {"policy": "twin", "params": policy.params, "seed": args.seed,
            "chain_nodes": args.chain_nodes, "train_samples": int(len(train_ids)),
            "train_points": None, "fit_seconds": policy.info_["fit_seconds"],
            "model": model.name, "replayed": policy.info_}
    (out / "fit.json").write_text(json.dumps(info, indent=2, default=str) + "\n")
    print(f"twin {args.mode} n={args.chain_nodes}: {policy.info_['validation_samples']} validation "
          f"samples replayed in {policy.info_['decide_seconds']:.0f} s (median decision "
          f"{policy.info_['median_decision_s']:.3f} s) -> {out}")
