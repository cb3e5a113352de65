"""The tuned twin (``twin_tuned``): its free settings chosen by time-ordered cross-fitting on
the training samples (:func:`tune_twin`), as the ``*_tuned`` policies choose their threshold
(mirage.policies.tuning). Each block's episodes are replayed once with every point's draws
recorded (:func:`record_draws`, :func:`record_plan_draws`); each candidate setting is then read
off the recorded draws (:func:`quantile_submits`, :func:`plan_submits`) without simulating again.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from mirage.outcomes import SampleSet
from mirage.policies.tuning import held_out, sweep, time_blocks
from mirage.sim import JobTable
from mirage.twin.policy import TwinPolicy, plan_submit_now
from mirage.twin.replay import TwinEvalError, ids_in_time_order, run_twin_episode, spec_of
from mirage.twin.world import with_inferred_dependencies
from mirage.units import DAY_S, HOUR_S


#: the tuned twin's candidates: the quantile level as m of its K draws (tau = m / K) and the
#: tolerance (s) the m-th smallest x must exceed; cautious first (low tau, high tolerance)
TUNE_TOLERANCES_S = (HOUR_S, 1800, 900, 300, 60)
#: the tuned plan rule's candidates: the overlap cost the twin weighs its candidate submit
#: times by, as a multiple of the evaluation's c_O (the drawn futures of a heavier training
#: window make early submits look cheap; a larger weight corrects it); cautious first
TUNE_OVERLAP_WEIGHTS = (8.0, 6.0, 4.0, 3.0, 2.0, 1.5, 1.0)
#: the time after a block's last decision point whose jobs the block's fit leaves out too: the
#: futures its episodes simulate (a predecessor's limit of 48 h and a day of its queue)
_HOLE_AFTER_S = 3 * DAY_S


def record_draws(policy, data: SampleSet, table: JobTable, cluster, *, sample_ids,
                 progress=None) -> tuple[np.ndarray, pd.DataFrame]:
    """Every point's K draws of x (hours, +inf beyond the policy's ``cap_h``) on the samples
    ``sample_ids`` of ``data``, the episodes run to the predecessor's end: an array (n points,
    K) aligned with ``data.subset(sample_ids).points`` (NaN where the twin is not asked: the
    predecessor's end), whether the plan veto allows a submit at each point, and the timing
    frame. ``policy``: a fitted quantile-rule twin with
    ``early_stop`` and ``sign_only`` off (otherwise draws are missing)."""
    if policy.early_stop or policy.sign_only or policy.rule != "quantile":
        raise TwinEvalError("record_draws needs the quantile rule with early_stop and sign_only "
                            "off. Fix: set them in the twin's params")
    K = int(policy.K)
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
    if policy.rule != "plan":
        raise TwinEvalError("record_plan_draws needs the plan rule. Fix: set rule: plan")
    until = None
    if overlap_costs is not None:
        ci = float(policy.c_I if c_I is None else c_I)
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
    (:meth:`~mirage.twin.policy.TwinPolicy.evaluate_plan`): submit iff the mean cost of
    submitting now is the lowest of the candidate submit times. Points without draws never
    submit."""
    return np.array([_plan_submit(x, c_I, c_O) for x in draws], dtype=bool)


def _plan_submit(x, c_I: float, c_O: float) -> bool:
    """One point of :func:`plan_submits`: ``x`` its (K, J) draws (None: not asked, no submit)."""
    return x is not None and plan_submit_now(x, c_I, c_O)


def quantile_submits(draws: np.ndarray, m: int, tolerance_s: float) -> np.ndarray:
    """Per point: does the twin's quantile rule submit, with the m-th smallest of the K draws
    as the quantile (tau = m / K, ``numpy.quantile(..., method="inverted_cdf")``) and this
    tolerance? Points without draws never submit."""
    q = np.sort(draws, axis=1)[:, int(m) - 1]  # NaN rows sort to NaN: False below
    with np.errstate(invalid="ignore"):
        return q > float(tolerance_s) / HOUR_S


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
    without the plan veto, :meth:`~mirage.twin.policy.TwinPolicy.plan_allows`) is scored
    by the mean over blocks of its cost divided by the block's reactive cost. Returns ``(the
    chosen params: tau, tolerance_s, plan_veto; the sweep table; info)``.

    With ``rule: plan`` in ``params`` it tunes the plan rule instead: the blocks record every
    point's draws of each candidate submit time (:func:`record_plan_draws`, the plan veto kept
    on), and the candidate is the overlap cost the rule weighs them by
    (``TUNE_OVERLAP_WEIGHTS`` x ``c_O``); chosen params: c_O and plan_veto (kept on)."""
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
    if untuned.rule not in ("quantile", "plan"):
        raise TwinEvalError(f"twin_tuned tunes the quantile or the plan rule, not "
                            f"{untuned.rule!r}. Fix: set rule: quantile or rule: plan")
    K = int(untuned.K)
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
                 "cap_h": max(tolerances_s) / HOUR_S, "rule": "quantile"})
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
        return _choose_overlap_weight(blocks, c_I, c_O, float(untuned.c_O), info)
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
    m0 = int(np.ceil(untuned.quantile_level * K - 1e-9))
    row = table_.loc[(table_["m"] == m0) & (table_["tolerance_s"] == int(untuned.tolerance_s))
                     & (~table_["plan_veto"].astype(bool)), "cost_ratio"]
    info.update({"tune_cost_ratio": float(table_["cost_ratio"].min()),
                 "untuned_cost_ratio": float(row.iloc[0]) if len(row) else None,
                 "chosen": chosen})
    return chosen, table_, info


def _choose_overlap_weight(blocks, c_I: float, c_O: float, untuned_c_O: float, info: dict):
    """The plan rule's tuning: the overlap cost its candidate submit times are weighed by
    (TUNE_OVERLAP_WEIGHTS x the evaluation's c_O), read off the blocks' recorded draws and
    scored by the evaluation's own costs."""
    candidates = [{"c_O": float(w) * c_O} for w in TUNE_OVERLAP_WEIGHTS]
    best, table_ = sweep(blocks, candidates, lambda b, c: plan_submits(b.score, c_I, c["c_O"]),
                         c_I, c_O)
    chosen = {"c_O": float(best["c_O"]), "plan_veto": True}  # the veto the recording had
    row = table_.loc[np.isclose(table_["c_O"], untuned_c_O), "cost_ratio"]
    info.update({"tune_cost_ratio": float(table_["cost_ratio"].min()),
                 "untuned_cost_ratio": float(row.iloc[0]) if len(row) else None,
                 "chosen": chosen})
    return chosen, table_, info
