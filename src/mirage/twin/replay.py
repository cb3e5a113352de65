"""Replaying the twin policy on a sample set: each sample's episode re-run, the twin asked at
each decision point with the queue the simulation shows there (:func:`run_twin`), on the trace
or in worlds drawn from the twin's own model (:func:`run_twin_model_worlds`).

The sample tables hold aggregates only (mirage.outcomes), not the queue the twin reads, so each
sample's :class:`~mirage.samples.generate.Episode` is re-run on the same split trace and cluster
description (a fraction of a second per sample) and checked against the stored points (same t
and k at every point, same features), which catches a wrong trace, mode or cluster file. The
twin stops the episode at its first submit; the outcome is the stored x_h of that point (the
table semantics, which tests/samples/test_closed_loop.py ties to the closed loop).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mirage.errors import MirageError
from mirage.outcomes import SampleSet, cost
from mirage.samples.generate import Episode, SampleSpec
from mirage.sim import JobTable
from mirage.sim.jobs import NO_DEP
from mirage.twin.world import true_future, view_from_sim
from mirage.units import DAY_S, HOUR_S


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
                     simulate=None, truth: str | None = None,
                     record: list | None = None, record_until=None) -> tuple[int, list[dict]]:
    """``(k, timing rows)``: the decision point of the twin's first submit in ``spec``'s episode
    (the last point, the reactive one, when it never submits), and one row per point asked.
    ``points``: the stored points of the sample, checked point by point (None: no check).
    ``truth`` (an ablation, mirage.twin.world.TRUTHS): the trace's runtimes and/or arrivals replace
    the policy's draws in every simulated future. ``record``: a list that receives ``(k, x_h
    of the draws, does the plan veto allow a submit)`` for every point asked; the episode then
    runs on past the first submit to the predecessor's end (the tuning reads every point), or
    until ``record_until(record)`` is true (the tuning has what it reads)."""
    ep = Episode(table, cluster, spec)
    if simulate is None:
        simulate = policy.simulator(cluster)
    if truth is not None:
        horizon_s = int(round(float(policy.horizon_h) * HOUR_S))
        drawn_simulate = simulate

        def simulate(view, future, **kw):
            return drawn_simulate(view, true_future(ep.sim, view, future, truth, horizon_s), **kw)
    stored = None if points is None else points.sort_values("k").set_index("k", drop=False)
    timing = []
    first = None
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
            return (k if first is None else first), timing
        t0 = time.perf_counter()
        view = view_from_sim(ep.sim, t, pred_jid=ep.pred, pred_submit=ep.t_pred,
                             pred_limit_s=ep.limit_s, chain_nodes=spec.chain_nodes)
        submit, x = policy.evaluate(view, simulate)
        timing.append({"sample_id": spec.sample_id, "k": k, "draws": int((~np.isnan(np.reshape(x, (len(x), -1))[:, 0])).sum()),
                       "seconds": time.perf_counter() - t0, "n_running": view.n_running,
                       "n_pending": view.n_pending, "submit": bool(submit), "reactive": False})
        if record is not None:
            record.append((k, np.asarray(x, dtype=np.float64), policy.plan_allows(view, simulate)))
            if submit and first is None:
                first = k
            if record_until is not None and record_until(record):
                return (k if first is None else first), timing
        elif submit:
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


#: how far past the predecessor's submit a drawn world's arrivals reach: the predecessor's
#: wait, its 48 h and the successor's wait after it
WORLD_HORIZON_S = 7 * DAY_S


@dataclass(frozen=True)
class ModelWorld:
    """One world drawn from the twin's own model for one sample (:func:`model_world`)."""

    table: JobTable  # the trace up to the predecessor's submit, then the drawn future
    cluster: object  # the description it is simulated with (inferred dependencies and holds baked in)
    # the training span its arrivals copy: a twin deciding in the world is fitted without it
    hole: tuple[int, int]
    drawn_runtimes: int  # jobs running or queued at the predecessor's submit given drawn runtimes
    arrivals: int  # jobs the drawn future submits


def model_world(policy, table: JobTable, cluster, spec: SampleSpec, rng: np.random.Generator, *,
                horizon_s: int = WORLD_HORIZON_S, runtimes: bool = True) -> ModelWorld:
    """A world in which the twin's model is exactly right: ``spec``'s episode on the trace as
    it is up to the predecessor's submit (the same queue, the same decision point 0), and from
    there one future drawn as the fitted ``policy`` draws them (the runtimes of the jobs running
    and queued then, conditioned on their elapsed time, where ``runtimes``; the arrivals of
    ``horizon_s``: a week block of its training window). In such a world the oracle still knows
    the future and the twin only its distribution, so the twin's cost against the oracle's there
    is what the future's uncertainty (and the rule) costs when the model has no bias; the twin
    deciding in it is fitted without ``hole`` (else one of its draws would be the world itself).
    """
    ep = Episode(table, cluster, spec)
    c = int(ep.t_pred)
    ep.sim.run_until(c)
    view = view_from_sim(ep.sim, c, pred_jid=ep.pred, pred_submit=c, pred_limit_s=ep.limit_s,
                         chain_nodes=spec.chain_nodes)
    n0 = int(np.searchsorted(table.submit, c, side="right"))  # the trace's jobs up to c
    # the service's jobs keep the priority the trace's episode gives them
    service_tprio = (table.inserted_tprio if table.inserted_tprio is not None
                     else float(np.median(table.tprio)) if len(table) else 0.0)
    # the dependencies and queue-entry times the trace's simulation uses (those the description
    # infers from recorded times included), baked into the world: its drawn jobs have no
    # recorded times to infer from
    static = ep.sim.s
    dep, qtime = static.table.dep, static.qtime_arr
    run, end = table.run[:n0].copy(), table.end[:n0].copy()
    drawn = 0
    if runtimes:
        for ids, users, limits, elapsed in (
                (view.running_id, view.running_user, view.running_limit_s, view.running_elapsed_s),
                (view.pending_id, view.pending_user, view.pending_limit_s,
                 np.zeros(view.n_pending, np.int64))):
            ids = np.asarray(ids, dtype=np.int64)
            mine = (ids >= 0) & (ids < n0)
            r = policy.draw_runtimes(rng, np.asarray(users, dtype=object)[mine],
                                     np.asarray(limits)[mine], np.asarray(elapsed)[mine])
            run[ids[mine]] = r
            end[ids[mine]] = table.start[ids[mine]] + r
            drawn += int(mine.sum())
    arr = policy.draw_arrivals(rng, c, int(view.capacity), horizon_s=horizon_s)
    na = len(arr["submit"])
    users = list(table.users)
    code = {u: i for i, u in enumerate(users)}
    ucodes = np.empty(na, dtype=np.int64)
    for j, u in enumerate(arr["user"].tolist()):
        if str(u) not in code:
            code[str(u)] = len(users)
            users.append(str(u))
        ucodes[j] = code[str(u)]
    row = {int(i): n0 + j for j, i in enumerate(arr["id"].tolist())}
    adep = np.array([row.get(int(d), NO_DEP) for d in arr["dep"].tolist()], dtype=np.int64)
    far = c + 10**8  # an arrival's recorded start: none (it is simulated, never warm-started)
    a_run = np.minimum(arr["run"], arr["limit_s"]).astype(np.int64)
    world = JobTable(
        job_id=np.concatenate([table.job_id[:n0], np.array([f"world-{j}" for j in range(na)],
                                                           dtype=object)]),
        submit=np.concatenate([table.submit[:n0], arr["submit"]]).astype(np.int64),
        start=np.concatenate([table.start[:n0], np.full(na, far)]).astype(np.int64),
        end=np.concatenate([end, far + a_run]).astype(np.int64),
        limit=np.concatenate([table.limit[:n0], arr["limit_s"]]).astype(np.int64),
        run=np.concatenate([run, a_run]).astype(np.int64),
        nodes=np.concatenate([table.nodes[:n0], arr["nodes"]]).astype(np.int64),
        user=np.concatenate([table.user[:n0], ucodes]).astype(np.int64),
        tprio=np.concatenate([table.tprio[:n0], np.asarray(arr["tprio"], float)]),
        dep=np.concatenate([dep[:n0], adep]).astype(np.int64),
        users=tuple(users), eligible=np.concatenate([qtime[:n0], arr["submit"]]).astype(np.int64),
        inserted_tprio=service_tprio)
    source = int(arr["source"])
    hole = (source, source + int(horizon_s)) if source >= 0 else (c, c)
    return ModelWorld(world, cluster.with_(infer_dependencies=False, infer_holds=False), hole,
                      drawn, na)


def run_twin_model_worlds(policy, data: SampleSet, table: JobTable, cluster, *, train: pd.DataFrame,
                          sample_ids, seed: int = 0, truth: str | None = None,
                          runtimes: bool = True, progress=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`run_twin` in worlds drawn from the twin's own model (:func:`model_world`, one per
    sample, seeded by ``(seed, sample_id)``: the same world for every rule and ``truth``): the
    episode simulated in the world gives the oracle's and reactive's outcomes there, and the
    twin (``policy``'s settings, refitted on ``train`` without the world's source weeks) decides
    in it. Returns the frame of :func:`run_twin` with ``oracle_cost`` (at the policy's c_I,
    c_O) and the world's size, and the timing frame."""
    from mirage.samples.generate import generate_sample

    samples = data.samples.set_index("sample_id", drop=False)
    c_I, c_O = float(policy.c_I), float(policy.c_O)
    rows, timing = [], []
    for sid in sample_ids:
        spec = spec_of(samples.loc[sid])
        world = model_world(policy, table, cluster, spec, np.random.default_rng([int(seed), int(sid)]),
                            runtimes=runtimes)
        pts = generate_sample(world.table, world.cluster, spec)["points"]
        twin = type(policy)(**policy.get_params()).fit(trace=train, seed=policy.seed_,
                                                      holes=[world.hole])
        k, tim = run_twin_episode(twin, world.table, world.cluster, spec, pts, truth=truth)
        timing.extend(tim)
        x = pts["x_h"].to_numpy(dtype=float)
        rows.append({"sample_id": int(sid), "k": k, "x_h": float(x[k]), "n_points": len(pts),
                     "reactive_x_h": float(x[-1]), "oracle_cost": float(cost(x, c_I, c_O).min()),
                     "world_arrivals": world.arrivals, "world_drawn_runtimes": world.drawn_runtimes})
        if progress is not None:
            progress(len(rows), len(sample_ids), rows[-1])
    return pd.DataFrame(rows), pd.DataFrame(timing)


def ids_in_time_order(data: SampleSet, chain_nodes: int, every: int = 1,
                   split: str = "validation") -> list[int]:
    """The samples of ``split`` (validation by default) and ``chain_nodes`` in time order
    (every ``every``-th one)."""
    s = data.samples
    val = s.loc[(s["split"] == split) & (s["chain_nodes"] == chain_nodes)]
    return val.sort_values(["sample_start", "sample_id"])["sample_id"].tolist()[::every]


def print_progress(label: str):
    """A ``progress`` callback for :func:`run_twin`: one line per tenth of the samples."""
    t0 = time.perf_counter()

    def progress(done, total, row):
        if done == total or done % max(1, total // 10) == 0:
            print(f"{label}: {done}/{total} samples, {time.perf_counter() - t0:.0f} s", flush=True)

    return progress
