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
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from mirage.errors import MirageError
from mirage.outcomes import SampleSet, cost
from mirage.samples.generate import Episode, SampleSpec
from mirage.sim import JobTable
from mirage.sim.jobs import NO_DEP
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
                     simulate=None, truth: str | None = None,
                     record: list | None = None, record_until=None) -> tuple[int, list[dict]]:
    """``(k, timing rows)``: the decision point of the twin's first submit in ``spec``'s episode
    (the last point, the reactive one, when it never submits), and one row per point asked.
    ``points``: the stored points of the sample, checked point by point (None: no check).
    ``truth`` (an ablation, mirage.sim.twin.TRUTHS): the trace's runtimes and/or arrivals replace
    the policy's draws in every simulated future. ``record``: a list that receives ``(k, x_h
    of the draws, does the plan veto allow a submit)`` for every point asked; the episode then
    runs on past the first submit to the predecessor's end (the tuning reads every point), or
    until ``record_until(record)`` is true (the tuning has what it reads)."""
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
WORLD_HORIZON_S = 7 * 86400


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
    c_I, c_O = float(policy.params["c_I"]), float(policy.params["c_O"])
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


#: the tuned twin's candidates: the quantile level as m of its K draws (tau = m / K) and the
#: tolerance (s) the m-th smallest x must exceed; cautious first (low tau, high tolerance)
TUNE_TOLERANCES_S = (3600, 1800, 900, 300, 60)
#: the tuned plan rule's candidates: the overlap cost the twin weighs its candidate submit
#: times by, as a multiple of the evaluation's c_O (the drawn futures of a heavier training
#: window make early submits look cheap; a larger weight corrects it); cautious first
TUNE_OVERLAP_WEIGHTS = (8.0, 6.0, 4.0, 3.0, 2.0, 1.5, 1.0)
#: the time after a block's last decision point whose jobs the block's fit leaves out too: the
#: futures its episodes simulate (a predecessor's limit of 48 h and a day of its queue)
_HOLE_AFTER_S = 3 * 86400


def record_draws(policy, data: SampleSet, table: JobTable, cluster, *, sample_ids,
                 progress=None) -> tuple[np.ndarray, pd.DataFrame]:
    """Every point's K draws of x (hours, +inf beyond the policy's ``cap_h``) on the samples
    ``sample_ids`` of ``data``, the episodes run to the predecessor's end: an array (n points,
    K) aligned with ``data.subset(sample_ids).points`` (NaN where the twin is not asked: the
    predecessor's end), whether the plan veto allows a submit at each point, and the timing
    frame. ``policy``: a fitted quantile-rule twin with
    ``early_stop`` and ``sign_only`` off (otherwise draws are missing)."""
    if policy.params["early_stop"] or policy.params["sign_only"] or policy.params["rule"] != "quantile":
        raise TwinEvalError("record_draws needs the quantile rule with early_stop and sign_only "
                            "off. Fix: set them in the twin's params")
    K = int(policy.params["K"])
    xs, allowed, timing = _record(policy, data, table, cluster, sample_ids, progress)
    out = np.full((len(xs), K), np.nan)
    for i, x in enumerate(xs):
        if x is not None:
            out[i] = x
    return out, allowed, timing


def record_plan_draws(policy, data: SampleSet, table: JobTable, cluster, *, sample_ids,
                      progress=None, c_I: float | None = None,
                      overlap_costs=None) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """The ``plan`` rule's draws at every point of the samples ``sample_ids``, the episodes run
    to the predecessor's end: an object array aligned with ``data.subset(sample_ids).points``
    holding each point's (K, J) x_h of its candidate submit times (all NaN where the rule
    drew nothing: the plan veto, a waiting predecessor; None where it was not asked: the
    predecessor's end, or after the episode stopped), the plan veto's answer per point, and
    the timing frame. :func:`plan_submits` reads them. ``overlap_costs`` (with ``c_I``): the
    weights the tuning will read; an episode stops once the rule with each of them has
    submitted (the points after every first submit change no candidate's outcome)."""
    if policy.params["rule"] != "plan":
        raise TwinEvalError("record_plan_draws needs the plan rule. Fix: set rule: plan")
    until = None
    if overlap_costs is not None:
        ci = float(policy.params["c_I"] if c_I is None else c_I)
        pending: list = []  # the weights that have not submitted yet in this episode

        def until(rec):
            if len(rec) == 1:  # a new episode
                pending[:] = overlap_costs
            x = rec[-1][1]
            pending[:] = [w for w in pending if not _plan_submit(x, ci, w)]
            return not pending
    xs, allowed, timing = _record(policy, data, table, cluster, sample_ids, progress, until)
    out = np.empty(len(xs), dtype=object)
    out[:] = xs
    return out, allowed, timing


def _record(policy, data: SampleSet, table: JobTable, cluster, sample_ids, progress, until=None):
    """Every point's recorded x (None where the twin is not asked) and plan veto, in the
    order of ``data.subset(sample_ids).points``; the timing frame."""
    part = data.subset(sample_ids)
    pts = part.points
    out: list = [None] * len(pts)
    allowed = np.zeros(len(pts), dtype=bool)
    # points are sorted by (sample_id, k) with k contiguous from 0: a point's row is start + k
    starts = part.point_starts()
    samples = part.samples.set_index("sample_id", drop=False)
    timing = []
    for n, (sid, first) in enumerate(zip(pts["sample_id"].to_numpy()[starts], starts), 1):
        rec: list = []
        p = pts.iloc[first:first + int(samples.loc[sid, "n_points"])].reset_index(drop=True)
        _, tim = run_twin_episode(policy, table, cluster, spec_of(samples.loc[sid]), p, record=rec,
                                  record_until=until)
        timing.extend(tim)
        for k, x, ok in rec:
            out[first + k] = x
            allowed[first + k] = ok
        if progress is not None:
            progress(n, len(samples), {"sample_id": int(sid)})
    return out, allowed, pd.DataFrame(timing)


def plan_submits(draws: np.ndarray, c_I: float, c_O: float) -> np.ndarray:
    """Per point: does the ``plan`` rule submit with these costs, read off its recorded draws
    (:func:`record_plan_draws`)? The rule's own arithmetic
    (:meth:`~mirage.policies.twin.TwinPolicy.evaluate_plan`): submit iff the mean cost of
    submitting now is the lowest of the candidate submit times. Points without draws never
    submit."""
    return np.array([_plan_submit(x, c_I, c_O) for x in draws], dtype=bool)


def _plan_submit(x, c_I: float, c_O: float) -> bool:
    """One point of :func:`plan_submits`: ``x`` its (K, J) draws (None: not asked, no submit)."""
    from mirage.policies.twin import plan_submit_now

    return x is not None and plan_submit_now(x, c_I, c_O)


def quantile_submits(draws: np.ndarray, m: int, tolerance_s: float) -> np.ndarray:
    """Per point: does the twin's quantile rule submit, with the m-th smallest of the K draws
    as the quantile (tau = m / K, ``numpy.quantile(..., method="inverted_cdf")``) and this
    tolerance? Points without draws never submit."""
    q = np.sort(draws, axis=1)[:, int(m) - 1]  # NaN rows sort to NaN: False below
    with np.errstate(invalid="ignore"):
        return q > float(tolerance_s) / 3600.0


def tune_twin(train: pd.DataFrame, data: SampleSet, cluster, *, chain_nodes: int, seed: int = 0,
              params: dict | None = None, c_I: float = 1.0, c_O: float = 0.5,
              n_blocks: int = 4, every: int = 8, tolerances_s=TUNE_TOLERANCES_S,
              progress=None) -> tuple[dict, pd.DataFrame, dict]:
    """The twin's quantile level and tolerance chosen by time-ordered cross-fitting on the
    training samples (mirage.policies.tuning, as the ``*_tuned`` policies choose their
    threshold): every ``every``-th training sample of ``chain_nodes`` in time order, cut into
    ``n_blocks`` blocks; for each block the twin is fitted on the training jobs without that
    block's time (``holes``: from its first sample's start to three days past its last
    point) and records every point's K draws; each candidate (m of K, tolerance, with or
    without the plan veto, :meth:`~mirage.policies.twin.TwinPolicy.plan_allows`) is scored
    by the mean over blocks of its cost divided by the block's reactive cost. Returns ``(the
    chosen params: tau, tolerance_s, plan_veto; the sweep table; info)``.

    With ``rule: plan`` in ``params`` it tunes the plan rule instead: the blocks record every
    point's draws of each candidate submit time (:func:`record_plan_draws`, the plan veto kept
    on), and the candidate is the overlap cost the rule weighs them by
    (``TUNE_OVERLAP_WEIGHTS`` x ``c_O``); chosen params: c_O and plan_veto (kept on)."""
    from mirage.policies.tuning import held_out, sweep, time_blocks
    from mirage.policies.twin import TwinPolicy
    from mirage.sim.twin import with_inferred_dependencies

    base = {"c_I": c_I, "c_O": c_O, **(params or {})}
    plan = base.get("rule", "quantile") == "plan"
    if plan:
        if base.get("plan_veto") is False:
            raise TwinEvalError("twin_tuned with the plan rule keeps the plan veto (without it every "
                                "training point's candidate submit times are simulated K times: "
                                "hours on a real month). Fix: drop plan_veto from its params")
        base["plan_veto"] = True
    else:
        base.pop("plan_veto", None)
    untuned = TwinPolicy(**base)  # the settings the tuning starts from (checked here)
    untuned._check_params()
    if untuned.params["rule"] not in ("quantile", "plan"):
        raise TwinEvalError(f"twin_tuned tunes the quantile or the plan rule, not "
                            f"{untuned.params['rule']!r}. Fix: set rule: quantile or rule: plan")
    K = int(untuned.params["K"])
    train_ids = ids_in_time_order(data, chain_nodes, max(1, int(every)), split="train")
    if len(train_ids) < n_blocks:
        raise TwinEvalError(f"tuning the twin needs at least {n_blocks} training samples of "
                            f"chain_nodes={chain_nodes}, got {len(train_ids)}. Fix: lower "
                            "tune_every (policies.params.twin_tuned) or tune_blocks, or use a "
                            "run with more samples")
    jobs = with_inferred_dependencies(train, cluster)
    table = JobTable.from_frame(train)
    sub = data.subset(train_ids)
    recorder = ({**base} if plan else
                {**base, "early_stop": False, "sign_only": False,
                 "cap_h": max(tolerances_s) / 3600.0, "rule": "quantile"})
    record = record_plan_draws if plan else record_draws
    blocks, allowed_by_block, t0, asked, done = [], [], time.perf_counter(), 0, 0
    for ids in time_blocks(sub, n_blocks):
        part = sub.subset(ids)
        starts = part.samples["sample_start"].to_numpy(dtype="datetime64[s]").astype(np.int64)
        last_t = part.points["t"].to_numpy(dtype="datetime64[s]").astype(np.int64).max()
        hole = (int(starts.min()), int(last_t) + _HOLE_AFTER_S)
        twin = TwinPolicy(**recorder).fit(trace=jobs, seed=seed, holes=[hole])

        def step(n, total, row, _done=done):
            if progress is not None:
                progress(_done + n, len(train_ids), row)

        extra = ({"c_I": c_I, "overlap_costs": [w * c_O for w in TUNE_OVERLAP_WEIGHTS]}
                 if plan else {})
        draws, allowed, timing = record(twin, part, table, cluster, sample_ids=ids, progress=step,
                                        **extra)
        allowed_by_block.append(allowed)
        done += len(ids)
        asked += int((timing["draws"] > 0).sum()) if len(timing) else 0
        blocks.append(held_out(part, draws, c_I, c_O))
    info = {"tune_samples": len(train_ids), "tune_blocks": len(blocks), "tune_every": int(every),
            "tune_points_asked": asked, "tune_seconds": round(time.perf_counter() - t0, 2)}
    if plan:
        return _choose_overlap_weight(blocks, c_I, c_O, float(untuned.params["c_O"]), info)
    allows = {id(b): a for b, a in zip(blocks, allowed_by_block)}
    candidates = [{"plan_veto": g, "m": m, "tolerance_s": int(tol)}
                  for g in (False, True) for m in range(1, K) for tol in tolerances_s]

    def rule(b, c):
        hit = quantile_submits(b.score, c["m"], c["tolerance_s"])
        return hit & allows[id(b)] if c["plan_veto"] else hit

    best, table_ = sweep(blocks, candidates, rule, c_I, c_O)
    table_["tau"] = table_["m"] / K
    chosen = {"tau": int(best["m"]) / K, "tolerance_s": int(best["tolerance_s"]),
              "plan_veto": bool(best["plan_veto"])}
    m0 = int(np.ceil(untuned.tau * K - 1e-9))
    row = table_.loc[(table_["m"] == m0) & (table_["tolerance_s"] == int(untuned.params["tolerance_s"]))
                     & (~table_["plan_veto"].astype(bool)), "cost_ratio"]
    info.update({"tune_cost_ratio": float(table_["cost_ratio"].min()),
                 "untuned_cost_ratio": float(row.iloc[0]) if len(row) else None,
                 "chosen": chosen})
    return chosen, table_, info


def _choose_overlap_weight(blocks, c_I: float, c_O: float, untuned_c_O: float, info: dict):
    """The plan rule's tuning: the overlap cost its candidate submit times are weighed by
    (TUNE_OVERLAP_WEIGHTS x the evaluation's c_O), read off the blocks' recorded draws and
    scored by the evaluation's own costs."""
    from mirage.policies.tuning import sweep

    candidates = [{"c_O": float(w) * c_O} for w in TUNE_OVERLAP_WEIGHTS]
    best, table_ = sweep(blocks, candidates, lambda b, c: plan_submits(b.score, c_I, c["c_O"]),
                         c_I, c_O)
    chosen = {"c_O": float(best["c_O"]), "plan_veto": True}  # the veto the recording had
    row = table_.loc[np.isclose(table_["c_O"], untuned_c_O), "cost_ratio"]
    info.update({"tune_cost_ratio": float(table_["cost_ratio"].min()),
                 "untuned_cost_ratio": float(row.iloc[0]) if len(row) else None,
                 "chosen": chosen})
    return chosen, table_, info


def replay_twin(train: pd.DataFrame, validation: pd.DataFrame, data: SampleSet, cluster, *,
                chain_nodes: int, seed: int = 0, params: dict | None = None, c_I: float = 1.0,
                c_O: float = 0.5, progress=None, tune: dict | None = None, echo=None):
    """The twin fitted on the training split's jobs (``train``, canonical; dependencies
    inferred where ``cluster`` infers them) and replayed on every validation sample of
    ``chain_nodes`` in ``data``: a fitted
    :class:`~mirage.policies.replayed.ReplayedDecisions` (what `mirage evaluate` scores) and
    the timing frame of :func:`run_twin`. ``tune`` (``twin_tuned``: keyword arguments of
    :func:`tune_twin`, e.g. ``{"every": 8}``): the quantile level, tolerance and plan veto (the
    plan rule: its overlap weight) are chosen on the training samples first (``echo(line)`` is
    told the choice before the replay); the sweep is in ``info_["tuning"]``."""
    from mirage.policies.replayed import ReplayedDecisions
    from mirage.policies.twin import TwinPolicy
    from mirage.sim.twin import with_inferred_dependencies

    ids = ids_in_time_order(data, chain_nodes)
    if not ids:
        raise TwinEvalError(f"no validation samples with chain_nodes={chain_nodes}. Fix: pass "
                            "the run's samples and one of its chain sizes")
    params = dict(params or {})
    tuning = None
    if tune is not None:
        chosen, sweep_table, tuning = tune_twin(train, data, cluster, chain_nodes=chain_nodes,
                                                seed=seed, params=params, c_I=c_I, c_O=c_O,
                                                progress=progress, **tune)
        params.update(chosen)
        tuning["sweep"] = sweep_table.to_dict("records")
        if echo is not None:
            echo(f"tuned on {tuning['tune_samples']} training samples in {tuning['tune_seconds']:.0f} s: "
                 f"{chosen} (cost / reactive {tuning['tune_cost_ratio']:.3f}, untuned "
                 f"{tuning['untuned_cost_ratio']}); replaying the validation samples")
    t0 = time.perf_counter()
    policy = TwinPolicy(**{"c_I": c_I, "c_O": c_O, **params})
    policy.fit(trace=with_inferred_dependencies(train, cluster), seed=seed)
    fit_s = time.perf_counter() - t0
    res, timing = run_twin(policy, data, JobTable.from_frame(validation), cluster,
                           sample_ids=ids, progress=progress)
    asked = timing[timing["draws"] > 0] if len(timing) else timing
    info = {"fit_seconds": round(fit_s, 2), "decide_seconds": round(time.perf_counter() - t0 - fit_s, 2),
            "decisions_asked": int(len(asked)),
            "median_decision_s": float(asked["seconds"].median()) if len(asked) else 0.0,
            "validation_samples": len(ids)}
    if tuning is not None:
        info["tuning"] = tuning
    name = "twin" if tune is None else "twin_tuned"
    out = ReplayedDecisions(name, policy.get_params()).fit(res[["sample_id", "k"]], seed, info)
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
    name = args.policy
    tune = None
    if name == "twin_tuned":
        tune = {"every": int(params.pop("tune_every", 8)),
                "n_blocks": int(params.pop("tune_blocks", 4))}
    elif {"tune_every", "tune_blocks"} & set(params):
        raise MirageError("tune_every / tune_blocks are twin_tuned's parameters. Fix: use "
                          "--policy twin_tuned or drop them")
    desc = cluster_for(args.cluster, args.mode, args.cluster_file)
    data = SampleSet.load(args.samples)
    progress = print_progress(f"{name} {args.mode} n={args.chain_nodes}")
    policy, timing = replay_twin(pd.read_parquet(trace / "train.parquet"),
                                 pd.read_parquet(trace / "validation.parquet"), data, desc,
                                 chain_nodes=args.chain_nodes, seed=args.seed, params=params,
                                 c_I=args.c_I, c_O=args.c_O, progress=progress, tune=tune,
                                 echo=lambda m: print(f"{name} {args.mode} n={args.chain_nodes}: {m}",
                                                      flush=True))
    out.mkdir(parents=True, exist_ok=True)
    model = policy.save(out / "model.joblib")
    timing.to_csv(out / "timing.csv", index=False)
    train_ids = ids_in_time_order(data, args.chain_nodes, split="train")
    info = {"policy": name, "params": policy.params, "seed": args.seed,
            "chain_nodes": args.chain_nodes, "train_samples": int(len(train_ids)),
            "train_points": None, "fit_seconds": policy.info_["fit_seconds"],
            "model": model.name, "replayed": policy.info_}
    (out / "fit.json").write_text(json.dumps(info, indent=2, default=str) + "\n")
    if "tuning" in policy.info_:
        t = policy.info_["tuning"]
        print(f"{name} {args.mode} n={args.chain_nodes}: chose {t['chosen']} on {t['tune_samples']} "
              f"training samples in {t['tune_seconds']:.0f} s (cost / reactive "
              f"{t['tune_cost_ratio']:.3f}, the untuned twin's {t['untuned_cost_ratio']})")
    print(f"{name} {args.mode} n={args.chain_nodes}: {policy.info_['validation_samples']} validation "
          f"samples replayed in {policy.info_['decide_seconds']:.0f} s (median decision "
          f"{policy.info_['median_decision_s']:.3f} s) -> {out}")
