"""``mirage bench twin|twin-runtimes|twin-arrivals``: the twin policy on a finished run's
validation samples (with ablations that give it the trace's runtimes and/or arrivals), its
runtime model scored by CRPS, and what the observable queue foresees of the arrivals. Benchmarks,
not tests: they print figures and assert nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mirage import options
from mirage.units import HOUR_S

#: where bench_twin scores the twin: the trace's own samples, or worlds drawn from its model
WORLDS = ("trace", "model", "model-arrivals")


def _need_run(*paths: Path) -> None:
    """Refuse, naming the first missing one, unless every path of a finished run exists."""
    from mirage.errors import MirageError

    for f in paths:
        if not f.exists():
            raise MirageError(f"{f}: missing. Fix: pass results/<run>/<cluster> of a finished run "
                              "(its trace split and samples)")


def bench_twin(results, *, cluster: str, mode: str, chain_nodes: int, truths, rules, K: int = 16,
               seed: int = 0, cluster_file=None, sample_ids=None, every: int = 1,
               c_I: float = 1.0, c_O: float = 0.5, plan_veto: bool = False,
               params: dict | None = None, world: str = "trace") -> pd.DataFrame:
    """The twin on a run's validation samples (``results/<run>/<cluster>``), once per rule and
    per ablation (``truths``: none, runtimes, arrivals, both: the trace's own values in place of
    the draws), beside reactive and the oracle: one row per sample and setting. ``every``: every
    N-th validation sample in time order (when ``sample_ids`` is not given). ``plan_veto``: every
    rule simulates only where the scheduler's plan says a submit now is not early. ``params``: more
    of the twin's constructor settings (e.g. ``runtime_pool``), the same for every rule.
    ``world``: ``trace`` (the samples as they are) or ``model``: each sample's episode in a world
    drawn from the twin's own model from the predecessor's submit on (the runtimes of the jobs
    then running and queued, the arrivals: mirage.twin.replay.model_world), where the oracle
    and reactive are scored again; ``model-arrivals``: only the arrivals drawn."""
    from mirage.errors import MirageError
    from mirage.outcomes import SampleSet, cost, reference_outcomes
    from mirage.samples.shards import cluster_for
    from mirage.sim import JobTable
    from mirage.twin.policy import TwinPolicy
    from mirage.twin.replay import (
        ids_in_time_order, print_progress, run_twin, run_twin_model_worlds,
    )
    from mirage.twin.world import with_inferred_dependencies

    root = Path(results)
    trace = root / "trace"
    _need_run(trace / "train.parquet", trace / "validation.parquet", root / mode / "samples")
    desc = cluster_for(cluster, mode, cluster_file)
    train = with_inferred_dependencies(pd.read_parquet(trace / "train.parquet"), desc)
    table = JobTable.from_frame(pd.read_parquet(trace / "validation.parquet"))
    data = SampleSet.load(root / mode / "samples")
    if every < 1:
        raise MirageError(f"--every {every}: must be at least 1")
    if world not in WORLDS:
        raise MirageError(f"--world {world!r} unknown. Fix: use one of {WORLDS}")
    ids = ids_in_time_order(data, chain_nodes, every) if sample_ids is None else list(sample_ids)
    oracle = reference_outcomes(data, c_I, c_O).set_index("sample_id")["oracle_cost"]
    rows = []
    for rule in rules:
        policy = TwinPolicy(**{**(params or {}), "K": K, "rule": rule, "c_I": c_I, "c_O": c_O,
                               "plan_veto": plan_veto}).fit(trace=train, seed=seed)
        for truth in truths:
            t0 = time.perf_counter()
            progress = print_progress(f"  {rule} {truth} n={chain_nodes} ({world})")
            if world == "trace":
                res, timing = run_twin(policy, data, table, desc, sample_ids=ids,
                                       truth=None if truth == "none" else truth, progress=progress)
            else:
                res, timing = run_twin_model_worlds(
                    policy, data, table, desc, train=train, sample_ids=ids, seed=seed,
                    truth=None if truth == "none" else truth, runtimes=world == "model",
                    progress=progress)
            seconds = time.perf_counter() - t0
            asked = timing[timing["draws"] > 0]
            if world == "trace":
                res = res.assign(oracle_cost=res["sample_id"].map(oracle))
            res = res.assign(rule=rule, truth=truth, plan_veto=plan_veto, world=world,
                             cost=cost(res["x_h"].to_numpy(), c_I, c_O),
                             reactive_cost=cost(res["reactive_x_h"].to_numpy(), c_I, c_O),
                             median_decision_s=float(asked["seconds"].median()) if len(asked) else 0.0,
                             seconds=seconds)
            rows.append(res)
            print(f"{rule:8s} {truth:8s} n={chain_nodes} {world}: cost {res['cost'].mean():.3f} h, "
                  f"reactive {res['reactive_cost'].mean():.3f}, oracle {res['oracle_cost'].mean():.3f} "
                  f"({len(res)} samples, {seconds:.0f} s, median {res['median_decision_s'].iloc[0]:.3f} s "
                  "per decision)", flush=True)
    return pd.concat(rows, ignore_index=True)


def _bench_twin(args) -> None:
    out = bench_twin(args.results, cluster=args.cluster, mode=args.mode, chain_nodes=args.chain_nodes,
                     truths=args.truth, rules=args.rule, K=args.K, seed=args.seed,
                     cluster_file=args.cluster_file, every=args.every, plan_veto=args.plan_veto,
                     params=_twin_params(args.params), world=args.world)
    if args.out:
        out.to_csv(args.out, index=False)
        print(f"-> {args.out}")


def _twin_params(text: str | None) -> dict:
    import json

    from mirage.errors import MirageError
    from mirage.twin.policy import TwinPolicy

    if not text:
        return {}
    try:
        params = json.loads(text)
    except json.JSONDecodeError as e:
        raise MirageError(f"--params {text!r}: not JSON ({e}). Fix: e.g. --params "
                          "'{\"runtime_pool\": \"all\"}'") from None
    known = set(TwinPolicy().get_params())
    if not isinstance(params, dict) or set(params) - known:
        what = sorted(set(params) - known) if isinstance(params, dict) else params
        raise MirageError(f"--params: {what} not twin settings. Fix: use some of {sorted(known)}")
    return params


def crps(draws: np.ndarray, y: float) -> float:
    """The continuous ranked probability score of the sample ``draws`` for the outcome ``y``
    (the energy form: mean |X - y| - mean |X - X'| / 2; in the units of y, lower is better)."""
    x = np.sort(np.asarray(draws, dtype=np.float64))
    n = len(x)
    # mean |X - X'| over all pairs, from the sorted sample: 2 sum_i (2i - n + 1) x_i / n^2
    spread = 2.0 * float(np.sum((2 * np.arange(n) - n + 1) * x)) / (n * n)
    return float(np.mean(np.abs(x - y))) - 0.5 * spread


def bench_twin_runtimes(results, *, pools=("user", "bucket", "all"), jobs: int = 3000,
                        K: int = 64, seed: int = 0) -> pd.DataFrame:
    """How well the twin's runtime model predicts the validation window's runtimes, per
    ``runtime_pool``: for ``jobs`` validation jobs (seeded sample) standing at a seeded random
    point of their run, K draws of the remaining runtime from a twin fitted on the training
    trace, scored by CRPS (hours; mean over jobs, and weighted by the jobs' nodes, since a
    big job's end frees more of the cluster). One row per pool."""
    from mirage.errors import MirageError
    from mirage.twin.policy import TwinPolicy

    trace = Path(results) / "trace"
    _need_run(trace / "train.parquet", trace / "validation.parquet")
    train = pd.read_parquet(trace / "train.parquet")
    val = pd.read_parquet(trace / "validation.parquet")
    if "in_window" in val:
        val = val[val["in_window"].astype(bool)]
    val = val.dropna(subset=["start", "end", "time_limit_min", "nodes"])
    if len(val) == 0:
        raise MirageError(f"{trace / 'validation.parquet'}: no finished job in the window")
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(val), size=min(jobs, len(val)), replace=False))
    v = val.iloc[pick]
    limit = v["time_limit_min"].to_numpy(dtype=np.int64) * 60
    run = np.clip((v["end"] - v["start"]).dt.total_seconds().to_numpy(dtype=np.int64), 1, limit)
    elapsed = np.minimum((rng.random(len(v)) * run).astype(np.int64), run - 1)
    users = v["user"].astype("string").fillna("?").to_numpy(dtype=object)
    nodes = v["nodes"].to_numpy(dtype=np.float64)
    rows = []
    for pool in pools:
        twin = TwinPolicy(runtime_pool=pool).fit(trace=train, seed=seed)
        draw_rng = np.random.default_rng([seed, 1])
        scores = np.empty(len(v))
        for i in range(len(v)):
            drawn = twin.draw_runtimes(draw_rng, [users[i]] * K, [limit[i]] * K, [elapsed[i]] * K)
            scores[i] = crps((drawn - elapsed[i]) / HOUR_S, (run[i] - elapsed[i]) / HOUR_S)
        rows.append({"runtime_pool": pool, "jobs": len(v), "K": K, "crps_h": scores.mean(),
                     "crps_node_weighted_h": float(np.average(scores, weights=nodes))})
    return pd.DataFrame(rows)


def _bench_twin_runtimes(args) -> None:
    table = bench_twin_runtimes(args.results, pools=args.pools, jobs=args.jobs, K=args.K,
                                seed=args.seed)
    print(table.round(3).to_markdown(index=False))


#: what a user of the live cluster can know at time t of the jobs the next hours bring: the
#: training window's mean for that hour of the week (the twin's week-block arrivals copy a
#: training week at this offset, so this is their mean), the same hours a week earlier (sacct),
#: the hours just before t (sacct), and the node-hours queued at t (squeue)
ARRIVAL_PREDICTORS = ("hour_of_week", "last_week", "past", "queue")


def bench_twin_arrivals(results, *, horizons_h=(6.0, 24.0), step_h: float = 1.0) -> pd.DataFrame:
    """How much of the next hours' arrivals can be foreseen from what is observable: at every
    ``step_h`` of the validation window, the node-hours asked for (nodes x limit) by the jobs
    submitted in (t, t + H], against each of ARRIVAL_PREDICTORS, which read only jobs submitted
    up to t (and the training window). Per horizon and predictor: the Spearman correlation over
    the steps and the mean absolute error in node-hours (``queue`` is a signal, not an estimate:
    its MAE is left out); the training window's overall mean is the reference
    (``training_mean``); ``spearman_with_rest``: the correlation with what the hour-of-week
    mean leaves unexplained (truth minus it), i.e. what a predictor would add to the twin's
    arrival model. Deterministic."""
    from mirage.errors import MirageError
    from mirage.twin.policy import WEEK_S, hour_of_week

    trace = Path(results) / "trace"
    _need_run(trace / "train.parquet", trace / "validation.parquet")
    train = pd.read_parquet(trace / "train.parquet")
    val = pd.read_parquet(trace / "validation.parquet")

    def window(frame) -> tuple[int, int]:
        inside = frame[frame["in_window"].astype(bool)] if "in_window" in frame else frame
        sub = inside["submit"].dropna().to_numpy(dtype="datetime64[s]").astype(np.int64)
        if len(sub) == 0:
            raise MirageError(f"{trace}: a split without a job in its window. Fix: rerun the "
                              "split of a trace that has jobs in both windows")
        return int(sub.min()) // HOUR_S * HOUR_S, int(sub.max())

    (t_lo, t_hi), (v_lo, v_hi) = window(train), window(val)
    jobs = pd.concat([train, val], ignore_index=True)
    if "job_id" in jobs:
        jobs = jobs.drop_duplicates("job_id")
    jobs = jobs.dropna(subset=["submit", "nodes", "time_limit_min"])
    submit = jobs["submit"].to_numpy(dtype="datetime64[s]").astype(np.int64)
    # a job leaves the queue when it starts, or (cancelled while pending) when it ends
    left_queue = jobs["start"].fillna(jobs["end"]).to_numpy(dtype="datetime64[s]")
    left_queue = np.where(np.isnat(left_queue), np.iinfo(np.int64).max,
                          left_queue.astype(np.int64))
    node_h = jobs["nodes"].to_numpy(dtype=np.float64) * jobs["time_limit_min"].to_numpy(
        dtype=np.float64) / 60.0
    order = np.argsort(submit, kind="stable")
    submit, left_queue, node_h = submit[order], left_queue[order], node_h[order]
    cum = np.concatenate([[0.0], np.cumsum(node_h)])

    def asked(a, b):  # node-hours submitted in (a, b], vectorised over a, b
        return cum[np.searchsorted(submit, b, side="right")] - cum[np.searchsorted(submit, a, side="right")]

    step = int(round(step_h * HOUR_S))
    rows = []
    for H_h in horizons_h:
        H = int(round(float(H_h) * HOUR_S))
        t_train = np.arange(t_lo, t_hi - H + 1, step, dtype=np.int64)
        t_val = np.arange(v_lo // HOUR_S * HOUR_S, v_hi - H + 1, step, dtype=np.int64)
        if len(t_train) == 0 or len(t_val) == 0:
            raise MirageError(f"{trace}: a window shorter than the {H_h:g}-h horizon. Fix: pass "
                              "shorter --horizons")
        f_train = asked(t_train, t_train + H)
        per_how = pd.Series(f_train).groupby(hour_of_week(t_train)).mean()
        truth = asked(t_val, t_val + H)
        upto = np.searchsorted(submit, t_val, side="right")  # the jobs submitted by t
        queued = np.array([node_h[:n][left_queue[:n] > t].sum() for t, n in zip(t_val, upto)])
        pred = {
            "hour_of_week": per_how.reindex(hour_of_week(t_val)).fillna(f_train.mean()).to_numpy(),
            "last_week": asked(t_val - WEEK_S, t_val - WEEK_S + H),
            "past": asked(t_val - H, t_val),
            "queue": queued,
            "training_mean": np.full(len(t_val), f_train.mean()),
        }
        rest = truth - pred["hour_of_week"]  # what the twin's model does not foresee
        for name in (*ARRIVAL_PREDICTORS, "training_mean"):
            p = pred[name]
            rows.append({"horizon_h": float(H_h), "predictor": name, "steps": len(t_val),
                         "spearman": _rank_corr(p, truth),
                         "spearman_with_rest": (np.nan if name == "hour_of_week"
                                                else _rank_corr(p, rest)),
                         "mae_node_h": (np.nan if name == "queue"
                                        else float(np.mean(np.abs(p - truth)))),
                         "mean_asked_node_h": float(truth.mean())})
    return pd.DataFrame(rows)


def _rank_corr(a, b) -> float:
    """Spearman's correlation; nan (undefined) where either side is constant."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return np.nan
    return float(pd.Series(a).corr(pd.Series(b), method="spearman"))


def _bench_twin_arrivals(args) -> None:
    table = bench_twin_arrivals(args.results, horizons_h=args.horizons, step_h=args.step_h)
    print(table.round(3).to_markdown(index=False))


def register_twin_bench(bsub) -> None:
    a = bsub.add_parser("twin-arrivals", help="how much of the next hours' arrivals what a user "
                        "observes foresees: correlation and error of each predictor on the "
                        "validation window")
    a.add_argument("results", help="results/<run>/<cluster> of a finished run")
    a.add_argument("--horizons", type=float, nargs="+", default=[6.0, 24.0], help="hours ahead")
    a.add_argument("--step-h", type=float, default=1.0, help="hours between the points scored")
    a.set_defaults(func=_bench_twin_arrivals)

    r = bsub.add_parser("twin-runtimes", help="the twin's runtime model on the validation "
                        "window's jobs: CRPS of the remaining runtime per runtime_pool")
    r.add_argument("results", help="results/<run>/<cluster> of a finished run")
    r.add_argument("--pools", nargs="+", default=["user", "bucket", "all"],
                   choices=["user", "bucket", "all"])
    r.add_argument("--jobs", type=int, default=3000, help="validation jobs scored (seeded sample)")
    r.add_argument("-K", type=int, default=64, help="draws per job")
    options.add_seed(r)
    r.set_defaults(func=_bench_twin_runtimes)

    b = bsub.add_parser("twin", help="the twin policy on a run's validation samples, with the "
                        "ablations that give it the trace's runtimes and/or arrivals")
    b.add_argument("results", help="results/<run>/<cluster> of a finished run")
    b.add_argument("--cluster", default="ls6")
    b.add_argument("--cluster-file", help="the cluster description the samples were made with")
    b.add_argument("--mode", choices=["calibrated", "compat"], default="calibrated")
    options.add_chain_nodes(b, default=1)
    b.add_argument("--rule", nargs="+", default=["quantile"], choices=["quantile", "expected", "plan"])
    b.add_argument("--truth", nargs="+", default=["none", "runtimes", "arrivals", "both"],
                   choices=["none", "runtimes", "arrivals", "both"])
    b.add_argument("-K", type=int, default=16)
    options.add_seed(b)
    b.add_argument("--every", type=int, default=1,
                   help="every N-th validation sample in time order (a real trace's 156 per chain "
                        "size take hours on one core)")
    b.add_argument("--plan-veto", action="store_true",
                   help="simulate only where the scheduler's plan (every job to its limit, nothing "
                        "arriving) says a submit now is not early, for every rule")
    b.add_argument("--params", help="more twin settings as JSON, e.g. "
                   "'{\"runtime_pool\": \"all\"}' (-K, --rule and --plan-veto take precedence)")
    b.add_argument("--world", choices=list(WORLDS), default="trace",
                   help="model: score the twin, reactive and the oracle in worlds drawn from the "
                        "twin's own model from the predecessor's submit on (runtimes of the jobs "
                        "then queued and running, and the arrivals; model-arrivals: the arrivals "
                        "only): what the future's uncertainty costs when the model has no bias")
    b.add_argument("--out", help="write one row per sample and setting (CSV)")
    b.set_defaults(func=_bench_twin)
