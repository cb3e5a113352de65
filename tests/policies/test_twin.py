"""The twin policy (issue 17): decides from the observable queue only, reproducibly, and
simulating forward pays where the signal is clear."""

import dataclasses
import inspect
import json
from dataclasses import fields
from functools import partial
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mirage.features.queue import QueueView
from mirage.outcomes import SampleSet, first_true_grouped
from mirage.outcomes import cost as outcome_cost
from mirage.samples.generate import Episode, SampleSpec, generate_sample
from mirage.samples.shards import cluster_for
from mirage.sim import SERVICE_USER, JobTable, load_cluster, replay
from mirage.sim.engine import R_JID
from mirage.sim.synth import synthesize
from mirage.sim.whatif import what_if
from mirage.twin.decide import replay_twin
from mirage.twin.policy import QueueObservation, TwinPolicy, TwinPolicyError
from mirage.twin.replay import (
    WORLD_HORIZON_S, TwinEvalError, ids_in_time_order, model_world, run_twin, run_twin_episode,
    run_twin_model_worlds,
)
from mirage.twin.tune import (
    TUNE_OVERLAP_WEIGHTS, plan_submits, quantile_submits, record_draws, record_plan_draws, tune_twin,
)
from mirage.twin.world import (
    simulate_leads, simulate_x, true_future, view_from_sim, with_inferred_dependencies,
)

SPEC = SampleSpec(1, "ls6", "validation", 8, pd.Timestamp("2023-01-04 08:00"))
K_POINT = 325  # the predecessor runs, about 10.7 h left


def _cluster():
    # inferred dependencies come from recorded starts and ends: a planted end would change them
    return load_cluster("ls6").with_(infer_dependencies=False)


@pytest.fixture(scope="module")
def world():
    jobs = synthesize("ls6", start="2023-01-01", days=12, seed=3)
    return jobs, JobTable.from_frame(jobs), _cluster()


def _view_at(table, cluster, spec, k):
    """The episode standing at point k: (episode, t, view)."""
    ep = Episode(table, cluster, spec)
    for t, row in ep:
        if row["k"] == k:
            view = view_from_sim(ep.sim, t, pred_jid=ep.pred, pred_submit=ep.t_pred,
                                 pred_limit_s=ep.limit_s, chain_nodes=spec.chain_nodes)
            return ep, t, view
    raise AssertionError(f"the episode has no point {k}")


def _fit(jobs, seed=0, **kw):
    return TwinPolicy(**{"K": 8, **kw}).fit(trace=jobs, seed=seed)


def _same_x(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


# ---- 1. the future of the trace never reaches the decision ---------------------------------
def test_planted_future_changes_nothing_the_twin_sees(world):
    jobs, table, cluster = world
    ep1, t, view1 = _view_at(table, cluster, SPEC, K_POINT)
    assert view1.pred_running and view1.n_running > 0 and view1.n_pending > 0
    policy = _fit(jobs, early_stop=False)
    simulate = partial(simulate_x, cluster=cluster)
    d1, x1 = policy.evaluate_view(view1, simulate)
    truth1 = what_if(ep1.sim.snapshot(), t, SPEC.chain_nodes, 2880, SERVICE_USER, reuse=False)

    # plant a future: every job running or pending at t runs to its limit, and a burst of
    # large jobs arrives within the next two hours
    sim = ep1.sim
    running = [jid for jid, *_ in sim.running_jobs() if jid < table.n]
    pending = [r[R_JID] for r in sim.pending if r[R_JID] < table.n]
    planted = jobs.sort_values(["submit", "job_id"], kind="stable").reset_index(drop=True)
    touched = np.array(running + pending)
    limit = pd.to_timedelta(planted.loc[touched, "time_limit_min"].astype("int64"), unit="min")
    changed = planted.loc[touched, "end"] != planted.loc[touched, "start"] + limit
    assert changed.sum() > 10  # the plant changes many runtimes
    planted.loc[touched, "end"] = planted.loc[touched, "start"] + limit
    median = float(np.median(table.tprio))
    assert median == int(median)  # the burst keeps the median priority (the service's)
    users = sorted(planted["user"].dropna().unique())[:5]
    burst = pd.DataFrame({
        "cluster": "ls6", "job_id": [f"9{i:06d}" for i in range(12)],
        "user": [users[i % len(users)] for i in range(12)],
        "submit": pd.Timestamp(t, unit="s") + pd.to_timedelta(600 + 500 * np.arange(12), unit="s"),
        "time_limit_min": 2880, "nodes": 16, "priority": int(median)})
    burst["start"] = burst["submit"] + pd.Timedelta(hours=1)
    burst["end"] = burst["start"] + pd.Timedelta(hours=48)
    planted = pd.concat([planted, burst.astype({c: planted[c].dtype for c in burst.columns})],
                        ignore_index=True)
    table2 = JobTable.from_frame(planted)

    ep2, t2, view2 = _view_at(table2, cluster, SPEC, K_POINT)
    assert t2 == t
    assert view2.equals(view1)
    d2, x2 = policy.evaluate_view(view2, simulate)
    assert d2 == d1
    assert _same_x(x2, x1)
    assert np.isfinite(x1).sum() + np.isinf(x1).sum() == policy.K
    # the test has teeth: the true outcome of submitting now differs between the two worlds
    truth2 = what_if(ep2.sim.snapshot(), t, SPEC.chain_nodes, 2880, SERVICE_USER, reuse=False)
    assert truth2 != truth1


def test_queue_view_has_no_runtime_or_future_field():
    names = {f.name for f in fields(QueueView)}
    leaky = [n for n in names if n in ("run", "end", "runtime") or n.endswith(("_run", "_end"))
             or any(w in n for w in ("future", "arrival", "runtime"))]
    assert not leaky, leaky
    assert "pending_priority" in names and "running_start" in names


# ---- 2. determinism ------------------------------------------------------------------------
def test_decisions_are_seeded_and_order_free(world):
    jobs, table, cluster = world
    simulate = partial(simulate_x, cluster=cluster)
    views = []
    ep = Episode(table, cluster, SPEC)
    for t, row in ep:
        if row["k"] in (300, K_POINT):
            views.append(view_from_sim(ep.sim, t, pred_jid=ep.pred, pred_submit=ep.t_pred,
                                       pred_limit_s=ep.limit_s, chain_nodes=SPEC.chain_nodes))
        if row["k"] == K_POINT:
            break
    a, b = _fit(jobs, early_stop=False), _fit(jobs, early_stop=False)
    forward = [a.evaluate_view(v, simulate) for v in views]
    backward = [b.evaluate_view(v, simulate) for v in reversed(views)][::-1]
    for (d1, x1), (d2, x2) in zip(forward, backward):
        assert d1 == d2 and _same_x(x1, x2)
    # the drawn futures depend on the seed
    other = _fit(jobs, seed=1, early_stop=False)
    fa = a.draw_future(views[1], a.rng_for(views[1], 0))
    fo = other.draw_future(views[1], other.rng_for(views[1], 0))
    assert not (np.array_equal(fa.running_run, fo.running_run)
                and np.array_equal(fa.arrival_submit, fo.arrival_submit))
    # early stopping gives the decision of all K draws
    early = _fit(jobs, early_stop=True)
    for v, (d, _) in zip(views, forward):
        assert early.decide_view(v, simulate) == d



def test_the_twin_is_asked_as_every_policy(world):
    """decide(observation) with the queue view (what the provisioner hands a policy that says
    needs_queue) gives the decision of evaluate_view in the description it was fitted with."""
    from mirage.policies.base import Observation
    from mirage.policies.catalogue import CATALOGUE

    jobs, table, cluster = world
    _, _, view = _view_at(table, cluster, SPEC, K_POINT)
    policy = TwinPolicy(K=8).fit(trace=jobs, cluster=cluster)
    assert CATALOGUE[policy.name].needs_queue  # so the provisioner hands it the queue
    expected = policy.evaluate_view(view, partial(simulate_x, cluster=cluster))[0]
    assert policy.decide(QueueObservation({}, queue=view)) == expected
    with pytest.raises(TwinPolicyError, match="Fix: pass a QueueObservation"):
        policy.decide(Observation({}))
    with pytest.raises(TwinPolicyError, match="Fix: fit it with cluster="):
        _fit(jobs).decide(QueueObservation({}, queue=view))

def test_drawn_runtimes_respect_elapsed_and_limit(world):
    jobs, table, cluster = world
    _, _, view = _view_at(table, cluster, SPEC, K_POINT)
    policy = _fit(jobs)
    f = policy.draw_future(view, np.random.default_rng(0))
    assert (f.running_run > view.running_elapsed_s).all()
    assert (f.running_run <= np.maximum(view.running_limit_s, view.running_elapsed_s + 1)).all()
    assert (f.pending_run >= 1).all() and (f.pending_run <= view.pending_limit_s).all()
    assert (f.arrival_submit > view.now).all()
    assert (f.arrival_submit <= view.now + policy.horizon_h * 3600).all()
    assert (np.diff(f.arrival_submit) >= 0).all()



@pytest.mark.parametrize("pool", ["user", "bucket", "all"])
def test_the_runtime_pool_sets_where_a_draw_starts(world, pool):
    # one user's jobs all run to 10 % of their limit, everyone else's to 90 %: the user's own
    # pool draws 0.1, the limit bucket's and the pooled set mostly 0.9
    jobs, _, _ = world
    jobs = jobs.copy()
    limit = pd.to_timedelta(jobs["time_limit_min"].astype(float), unit="min")
    mine = jobs["user"] == jobs["user"].mode()[0]
    jobs["end"] = jobs["start"] + (limit * np.where(mine, 0.1, 0.9)).dt.floor("s")
    policy = _fit(jobs, runtime_pool=pool)
    user, lim = str(jobs.loc[mine, "user"].iloc[0]), 3600 * 10
    runs = policy.draw_runtimes(np.random.default_rng(0), [user] * 400, [lim] * 400, [0] * 400)
    ratios = np.round(runs / lim, 3)
    if pool == "user":
        assert (ratios == 0.1).all()
    else:  # the bucket's and every job's ratios: this user's 0.1 among everyone's 0.9
        share = (ratios == 0.9).mean()
        assert share > 0.5 and set(np.unique(ratios)) <= {0.1, 0.9}
    with pytest.raises(TwinPolicyError, match="runtime_pool"):
        _fit(jobs, runtime_pool="job")

# ---- 3. a clear signal: a growing backlog, and an idle cluster ------------------------------
def _stream(every_h: float, days: int = 9, nodes: int = 8, run_h: int = 14):
    """Jobs of one size and runtime every ``every_h`` hours, scheduled by the simulator: at
    1.25 h the load is 1.12 and a backlog grows, at 6 h the cluster idles."""
    n = int(days * 24 / every_h)
    submit = pd.Timestamp("2023-01-01") + pd.to_timedelta(np.arange(n) * every_h * 3600, unit="s")
    frame = pd.DataFrame({
        "cluster": "ls6", "job_id": [str(100000 + i) for i in range(n)],
        "user": [f"u{i % 20:02d}" for i in range(n)], "submit": submit.astype("datetime64[s]"),
        "time_limit_min": pd.array([run_h * 60] * n, dtype="Int64"),
        "nodes": pd.array([nodes] * n, dtype="Int64"),
        "priority": pd.array([1000] * n, dtype="Int64")})
    frame["start"] = frame["submit"]
    frame["end"] = frame["submit"] + pd.Timedelta(hours=run_h)
    cluster = _cluster()
    starts = replay(JobTable.from_frame(frame), cluster.with_(warm_start=False))
    assert (starts >= 0).all()
    frame["start"] = pd.to_datetime(starts, unit="s").astype("datetime64[s]")
    frame["end"] = frame["start"] + pd.Timedelta(hours=run_h)
    return frame, cluster


@pytest.mark.parametrize("rule", ["quantile", "expected", "plan"])
@pytest.mark.parametrize("every_h", [1.25, 6.0], ids=["backlog", "idle"])
def test_twin_beats_reactive_on_a_clear_signal(every_h, rule):
    frame, cluster = _stream(every_h)
    table = JobTable.from_frame(frame)
    spec = SampleSpec(0, "ls6", "validation", 8, pd.Timestamp("2023-01-02"))
    points = generate_sample(table, cluster, spec)["points"]
    policy = TwinPolicy(K=4, gate_h=24, rule=rule).fit(trace=frame, seed=0)
    k, timing = run_twin_episode(policy, table, cluster, spec, points)
    reactive_x = points["x_h"].iloc[-1]
    x = points["x_h"].iloc[k]
    cost = lambda v: max(v, 0.0) + 0.5 * max(-v, 0.0)  # noqa: E731
    if every_h < 2:
        assert reactive_x > 6  # reactive resubmission waits out the backlog
        assert k < len(points) - 1 and cost(x) < 0.25 * cost(reactive_x)
    else:
        assert reactive_x <= 0  # the successor starts at the predecessor's end
        assert k == len(points) - 1  # and the twin stays reactive
    assert timing[-1]["submit"]


def test_run_twin_checks_the_stored_points(world):
    from mirage.twin.replay import TwinEvalError

    frame, cluster = _stream(6.0, days=6)
    table = JobTable.from_frame(frame)
    spec = SampleSpec(0, "ls6", "validation", 8, pd.Timestamp("2023-01-02"))
    points = generate_sample(table, cluster, spec)["points"]
    wrong = points.copy()
    wrong["t"] = wrong["t"] + pd.Timedelta(minutes=10)
    policy = TwinPolicy(K=2, gate_h=0.5).fit(trace=frame, seed=0)
    with pytest.raises(TwinEvalError):
        run_twin_episode(policy, table, cluster, spec, wrong)


# ---- 4. scikit-learn conventions ----------------------------------------------------------
def test_params_and_fitted_attributes(world):
    jobs = world[0]
    p = TwinPolicy(K=16, horizon_h=48.0)
    assert not [a for a in vars(p) if a.endswith("_")]
    assert set(p.get_params()) == set(inspect.signature(TwinPolicy).parameters)
    assert type(p)(**p.get_params()).get_params() == p.get_params()
    assert "K=16" in repr(p)
    with pytest.raises(RuntimeError):
        p.draw_arrivals(np.random.default_rng(0), 0, 80)
    with pytest.raises(TwinPolicyError):
        p.fit(None)
    with pytest.raises(TwinPolicyError):
        TwinPolicy(rule="mean").fit(trace=jobs)
    with pytest.raises(TwinPolicyError):
        p.submit_mask(pd.DataFrame({"k": [0]}))
    before = p.get_params()
    p.fit(trace=jobs, seed=3)
    assert p.get_params() == before
    fitted = {a for a in vars(p) if a.endswith("_")}
    assert {"ratio_pool_", "arrival_jobs_", "succ_tprio_", "seed_"} <= fitted
    assert p.seed_ == 3


def test_fit_reads_only_the_training_window(world):
    jobs = world[0].copy()
    cut = pd.Timestamp("2023-01-07")
    jobs["in_window"] = jobs["submit"] < cut
    a = TwinPolicy().fit(trace=jobs)
    b = TwinPolicy().fit(trace=jobs[jobs["in_window"]].drop(columns="in_window"))
    assert np.array_equal(a.ratio_pool_, b.ratio_pool_)
    assert (a.arrival_jobs_["submit"] < cut.value // 10**9).all()
    assert a.span_ == b.span_


def test_a_dependency_the_queue_shows_holds_the_job_in_the_drawn_world():
    # squeue shows a pending job's unfulfilled dependency (%E): the drawn world must hold it
    # until the job it waits on ends, though nodes are free before that
    from mirage.features.queue import QueueFuture
    from mirage.twin.world import twin_cluster, world_table
    from mirage.sim.warmstart import warm_start

    now = 1_700_000_000
    view = QueueView(
        now=now, capacity=10,
        running_nodes=[2], running_limit_s=[7200], running_start=[now - 600], running_user=["a"],
        pending_submit=[now - 300, now - 200], pending_nodes=[2, 2],
        pending_limit_s=[3600, 3600], pending_priority=[0.0, 0.0], pending_user=["a", "b"],
        pred_submit=now - 900, pred_start=now - 800, pred_limit_s=36000, chain_nodes=1,
        running_id=[5], pending_id=[7, 8], pending_dep=[5, -1])
    future = QueueFuture(
        running_run=np.array([3600]), pending_run=np.array([1800, 1800]),
        arrival_submit=np.zeros(0, np.int64), arrival_nodes=np.zeros(0, np.int64),
        arrival_limit_s=np.zeros(0, np.int64), arrival_run=np.zeros(0, np.int64),
        arrival_user=np.zeros(0, object), arrival_tprio=np.zeros(0))
    cl = twin_cluster(_cluster(), view)
    tab, _ = world_table(view, future, cl)
    held = int(np.flatnonzero(tab.submit == now - 300)[0])
    free = int(np.flatnonzero(tab.submit == now - 200)[0])
    runner = int(np.flatnonzero(tab.submit == now - 600)[0])
    assert tab.dep[held] == runner and tab.dep[free] < 0
    sim = warm_start(tab, cl, now, warm=True, pinned=False, record=True)
    sim.run_until(now + 4 * 3600)
    start = sim.trace_start
    assert start[free] == now  # free nodes: at once
    assert start[held] >= now + 3000  # only once the running job ends (3600 s after its start)
    # without the dependency the same job starts at once
    plain = QueueView(**{f.name: getattr(view, f.name) for f in fields(view)
                         if f.name != "pending_dep"})
    tab2, _ = world_table(plain, future, cl)
    sim2 = warm_start(tab2, cl, now, warm=True, pinned=False, record=True)
    sim2.run_until(now + 4 * 3600)
    assert sim2.trace_start[held] == now


def test_a_handover_within_the_tolerance_is_no_interruption():
    pol = TwinPolicy(K=4, tolerance_s=60)
    assert not pol.quantile_rule(np.array([2 / 3600, -1.0, 0.0, 30 / 3600]))
    assert pol.quantile_rule(np.array([61 / 3600, 2.0, 5.0, 1.0]))


@pytest.mark.parametrize("inferred", [False, True], ids=["recorded", "inferred-dependencies"])
def test_with_the_traces_runtimes_and_arrivals_the_drawn_world_is_the_true_one(world, inferred):
    # the ablation's premise: the twin's world differs from the truth only by its draws (with
    # inferred dependencies: the arrivals' chains come with them)
    jobs, table, cluster = world
    if inferred:
        cluster = load_cluster("ls6")
        assert cluster.infer_dependencies
    policy = _fit(jobs)
    moved = 0
    for k in (200, 325, 380):
        ep, t, view = _view_at(table, cluster, SPEC, k)
        assert view.pred_running
        start = what_if(ep.sim.snapshot(), t, SPEC.chain_nodes, 2880, SERVICE_USER, reuse=False)
        x_true = (start - view.pred_start - view.pred_limit_s) / 3600
        drawn = policy.draw_future(view, policy.rng_for(view, 0))
        both = true_future(ep.sim, view, drawn, "both", 72 * 3600)
        assert simulate_x(view, both, cluster) == x_true
        # the plan rule's engine call: submitting now is the same what-if in the same world
        assert simulate_leads(view, both, cluster, offsets_s=[0, 600])[0] == x_true
        # the service's priority is the predecessor's, which the view shows (the priority it
        # started with): the policy's own estimate does not enter
        assert np.isfinite(view.pred_priority)
        wrong = dataclasses.replace(both, succ_tprio=both.succ_tprio - 500.0)
        assert simulate_x(view, wrong, cluster) == x_true
        blind = dataclasses.replace(view, pred_priority=float("nan"))
        moved += simulate_x(blind, wrong, cluster) != x_true
        runtimes = true_future(ep.sim, view, drawn, "runtimes", 72 * 3600)
        assert np.array_equal(runtimes.running_run, table.run[view.running_id])
        assert np.array_equal(runtimes.arrival_submit, drawn.arrival_submit)
        arrivals = true_future(ep.sim, view, drawn, "arrivals", 72 * 3600)
        assert np.array_equal(arrivals.pending_run, drawn.pending_run)
        assert (arrivals.arrival_submit > t).all() and (arrivals.arrival_submit <= t + 72 * 3600).all()
        # the plan veto's future is what the scheduler shows, not a draw: no truth enters it
        # (else the veto of an ablation would know the runtimes and the arrivals)
        plan = policy.plan_future(view)
        assert plan.plan and plan.n_arrivals == 0
        for truth in ("runtimes", "arrivals", "both"):
            assert true_future(ep.sim, view, plan, truth, 72 * 3600) is plan
    assert moved  # without the predecessor's priority, a wrong estimate moves the successor


def test_drawn_arrivals_keep_the_chains_of_their_week(world):
    jobs, table, _ = world
    chained = with_inferred_dependencies(jobs, load_cluster("ls6"))
    assert chained["depends_on"].notna().sum() > 10  # the ls6 description infers chains
    policy = _fit(chained, horizon_h=72.0)
    now = int(pd.Timestamp("2023-01-09 12:00").value // 10**9)
    linked = 0
    for k in range(4):
        arr = policy.draw_arrivals(np.random.default_rng(k), now, 84)
        ids, deps = arr["id"], arr["dep"]
        assert len(set(ids.tolist())) == len(ids) and (ids <= -2).all()
        by_id = dict(zip(ids.tolist(), arr["submit"].tolist()))
        for i, d in zip(ids.tolist(), deps.tolist()):
            if d != -1:
                assert d in by_id and by_id[d] <= by_id[i]
                linked += 1
    assert linked > 0
    # without depends_on no arrival waits on another
    plain = _fit(jobs.assign(depends_on=pd.NA), horizon_h=72.0)
    assert (plain.draw_arrivals(np.random.default_rng(0), now, 84)["dep"] == -1).all()


def test_bench_twin_on_a_finished_run(tiny_run, tmp_path):
    # the ablation as a command: with the trace's runtimes and arrivals the twin's cost lies
    # between the oracle's and the worst point's, one row per validation sample
    import subprocess
    import sys

    ls6 = tiny_run / "results" / "tiny" / "ls6"
    out = tmp_path / "twin.csv"
    res = subprocess.run([sys.executable, "-m", "mirage", "bench", "twin", str(ls6), "--chain-nodes",
                          "1", "--truth", "none", "both", "-K", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = pd.read_csv(out)
    samples = pd.read_parquet(ls6 / "calibrated" / "samples" / "samples.parquet")
    n_val = int(((samples["split"] == "validation") & (samples["chain_nodes"] == 1)).sum())
    assert n_val > 0 and len(rows) == 2 * n_val
    assert set(rows["truth"]) == {"none", "both"}
    assert (rows["cost"] >= rows["oracle_cost"] - 1e-9).all()
    # every second validation sample in time order: the same rows for those samples
    out2 = tmp_path / "twin2.csv"
    res = subprocess.run([sys.executable, "-m", "mirage", "bench", "twin", str(ls6), "--chain-nodes",
                          "1", "--truth", "none", "-K", "2", "--every", "2", "--out", str(out2)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    val = samples[(samples["split"] == "validation") & (samples["chain_nodes"] == 1)]
    want = val.sort_values(["sample_start", "sample_id"])["sample_id"].tolist()[::2]
    half = pd.read_csv(out2)
    assert half["sample_id"].tolist() == want
    full = rows[rows["truth"] == "none"].set_index("sample_id").loc[want, "cost"]
    assert half["cost"].tolist() == full.tolist()
    # in worlds drawn from the twin's model: the oracle and reactive scored in each world, the
    # same worlds for every truth (seeded by the sample), the twin never below the oracle
    out3 = tmp_path / "twin3.csv"
    res = subprocess.run([sys.executable, "-m", "mirage", "bench", "twin", str(ls6), "--chain-nodes",
                          "1", "--truth", "none", "both", "-K", "2", "--every", "2", "--world",
                          "model", "--out", str(out3)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    model = pd.read_csv(out3)
    assert set(model["world"]) == {"model"} and model["sample_id"].tolist() == want * 2
    assert (model["cost"] >= model["oracle_cost"] - 1e-9).all()
    none, both = (model[model["truth"] == t].reset_index(drop=True) for t in ("none", "both"))
    assert none["oracle_cost"].tolist() == both["oracle_cost"].tolist()
    assert (none["world_arrivals"] > 0).all()
    bad = subprocess.run([sys.executable, "-m", "mirage", "bench", "twin", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Fix:" in bad.stderr


def test_the_runtime_model_is_scored_on_the_validation_jobs(tiny_run, capsys):
    from mirage.cli import main
    from mirage.bench.twin import bench_twin_runtimes, crps

    rng = np.random.default_rng(0)
    x, y = rng.exponential(size=50), 0.7
    brute = np.mean(np.abs(x - y)) - 0.5 * np.mean(np.abs(x[:, None] - x[None, :]))
    assert crps(x, y) == pytest.approx(brute) and crps(np.full(5, y), y) == pytest.approx(0.0)
    ls6 = tiny_run / "results" / "tiny" / "ls6"
    table = bench_twin_runtimes(ls6, jobs=200, K=16)
    assert table["runtime_pool"].tolist() == ["user", "bucket", "all"]
    assert (table["crps_h"] > 0).all() and (table["jobs"] <= 200).all()
    assert table.equals(bench_twin_runtimes(ls6, jobs=200, K=16))  # seeded
    assert main(["bench", "twin-runtimes", str(ls6), "--jobs", "50", "-K", "8", "--pools", "all"]) == 0
    assert "| all " in capsys.readouterr().out


def test_the_live_side_twin_needs_a_trace_and_a_description(tmp_path):
    from mirage.twin.live import load_twin

    with pytest.raises(TwinPolicyError, match="Fix: add --policy-param trace="):
        load_twin({"cluster": "ls6"})
    with pytest.raises(TwinPolicyError, match="no such trace"):
        load_twin({"trace": str(tmp_path / "none.parquet"), "cluster": "ls6"})


def test_replayed_decisions_answer_for_the_replayed_samples_only(tiny_run):
    # what `mirage evaluate` scores for the twin: the first submits the replay stored, the
    # same as run_twin's on those samples; a sample never replayed is an error naming the fix
    from mirage.errors import MirageError
    from mirage.outcomes import SampleSet
    from mirage.policies.fitting import load_fitted
    from mirage.policies.registry import policy_params
    from mirage.policies.replayed import ReplayedDecisions, ReplayedDecisionsError

    ls6 = tiny_run / "results" / "tiny" / "ls6"
    data = SampleSet.load(ls6 / "calibrated" / "samples")
    val = data.split("validation")
    for n in (1, 8):
        part = val.subset(val.samples.loc[val.samples["chain_nodes"] == n, "sample_id"])
        twin = load_fitted(ls6 / "calibrated" / "models" / f"n{n}" / "twin")
        assert isinstance(twin, ReplayedDecisions) and twin.name == "twin"
        assert twin.get_params()["params"]["K"] == 4  # tiny's setting reached the replay
        ks = twin.first_submit_all(part)
        assert list(ks.index) == list(part.sample_ids)
        n_points = part.samples.set_index("sample_id")["n_points"]
        assert ((ks >= 0) & (ks < n_points.reindex(ks.index))).all()
        timing = pd.read_csv(ls6 / "calibrated" / "models" / f"n{n}" / "twin" / "timing.csv")
        assert set(timing["sample_id"]) == set(part.sample_ids)
    with pytest.raises(ReplayedDecisionsError, match="Fix: replay it"):
        twin.first_submit_all(data.split("train"))
    with pytest.raises(ReplayedDecisionsError, match="first_submit_all"):
        twin.submit_mask(part.points)
    with pytest.raises(ReplayedDecisionsError, match="twice"):
        ReplayedDecisions().fit(pd.DataFrame({"sample_id": [1, 1], "k": [0, 1]}))
    with pytest.raises(MirageError, match="mirage samples twin"):
        policy_params("twin", {}, c_I=1.0, c_O=0.5, device="cpu")


# ---- twin_tuned: the quantile level, tolerance and plan veto chosen by time-ordered
# cross-fitting on the training samples (mirage.twin.tune.tune_twin), and what it rests on:
# fits that leave a block of time out (``holes``), the plan veto, recorded draws
DAY = 86400


@pytest.fixture(scope="module")
def long_jobs():
    return synthesize("ls6", start="2023-01-01", days=40, seed=4)


def _secs(ts) -> int:
    return int(pd.Timestamp(ts).value // 10**9)


def test_a_hole_leaves_its_jobs_and_weeks_out(long_jobs):
    jobs = long_jobs
    hole = (_secs("2023-01-15"), _secs("2023-01-22"))
    fitted = TwinPolicy(K=4).fit(trace=jobs, seed=0, holes=[hole])
    # the jobs submitted in the hole count in neither model: planting other runtimes, limits
    # and users there changes nothing
    planted = jobs.copy()
    inside = (planted["submit"] >= "2023-01-15") & (planted["submit"] < "2023-01-22")
    assert inside.sum() > 100
    planted.loc[inside, "end"] = planted.loc[inside, "start"] + pd.Timedelta(seconds=30)
    planted.loc[inside, "user"] = "planted"
    again = TwinPolicy(K=4).fit(trace=planted, seed=0, holes=[hole])
    assert np.array_equal(fitted.ratio_pool_, again.ratio_pool_)
    assert fitted.ratio_index_.keys() == again.ratio_index_.keys()
    for key in ("submit", "run", "nodes"):
        assert np.array_equal(fitted.arrival_jobs_[key], again.arrival_jobs_[key])
    assert not ((fitted.arrival_jobs_["submit"] >= hole[0])
                & (fitted.arrival_jobs_["submit"] < hole[1])).any()
    # the week-block arrivals never copy a window that touches the hole, from a decision
    # inside it or on either side
    H = int(fitted.horizon_h * 3600)
    src = fitted.arrival_jobs_["submit"]
    drawn = 0
    for now in (hole[0] + 2 * DAY, hole[0] - 5 * DAY, hole[1] + 3 * DAY):
        for seed in range(30):
            arr = fitted.draw_arrivals(np.random.default_rng(seed), now, 10**6)
            if not len(arr["submit"]):
                continue
            idx = -2 - arr["id"]
            s = int(src[idx[0]] - (arr["submit"][0] - now))  # the copied window's start
            assert np.array_equal(src[idx] - s + now, arr["submit"])
            assert s + H <= hole[0] or s >= hole[1]
            assert (s - now) % (7 * DAY) == 0  # the same hours of the week
            drawn += 1
    assert drawn >= 60
    # without holes the draws are those of a fit that never heard of them
    a = TwinPolicy(K=4).fit(trace=jobs, seed=0)
    b = TwinPolicy(K=4).fit(trace=jobs, seed=0, holes=())
    now = hole[0] + DAY
    for seed in range(5):
        x, y = (p.draw_arrivals(np.random.default_rng(seed), now, 10**6) for p in (a, b))
        assert np.array_equal(x["id"], y["id"]) and np.array_equal(x["submit"], y["submit"])
    with pytest.raises(TwinPolicyError, match="outside the holes"):
        TwinPolicy(K=4).fit(trace=jobs, seed=0, holes=[(0, 2**40)])


WORLD_SPEC = SampleSpec(7, "ls6", "validation", 8, pd.Timestamp("2023-02-01 08:00"))


@pytest.mark.parametrize("runtimes,holds", [(True, False), (False, False), (True, True)],
                         ids=["drawn-runtimes", "trace-runtimes", "inferred-holds"])
def test_a_model_world_starts_from_the_traces_queue_and_draws_the_rest(long_jobs, runtimes, holds):
    # the dependencies (and holds) inferred from recorded times are baked in: the world's own
    # jobs have no recorded times to infer from
    cluster = load_cluster("ls6").with_(infer_holds=holds)
    assert cluster.infer_dependencies
    jobs = long_jobs
    table = JobTable.from_frame(jobs)
    policy = TwinPolicy(K=4).fit(trace=jobs[jobs["submit"] < "2023-01-29"], seed=0)
    world = model_world(policy, table, cluster, WORLD_SPEC, np.random.default_rng(5),
                        runtimes=runtimes)
    again = model_world(policy, table, cluster, WORLD_SPEC, np.random.default_rng(5),
                        runtimes=runtimes)
    assert np.array_equal(world.table.submit, again.table.submit)  # seeded
    assert np.array_equal(world.table.run, again.table.run) and world.hole == again.hole
    ep = Episode(table, cluster, WORLD_SPEC)
    c = ep.t_pred
    n0 = int(np.searchsorted(table.submit, c, side="right"))
    w = world.table
    # up to the predecessor's submit the trace's own jobs; after it the drawn arrivals only
    assert np.array_equal(w.job_id[:n0], table.job_id[:n0]) and (w.submit[n0:] > c).all()
    assert world.arrivals == len(w) - n0 > 100
    assert not world.cluster.infer_dependencies and not world.cluster.infer_holds
    # the service keeps the trace's priority, not the world's median
    assert w.inserted_tprio == pytest.approx(float(np.median(table.tprio)))
    # the arrivals: one week block of the training window, the same hours of the week,
    # shifted to the predecessor's submit; the hole covers the window they copy
    src = policy.arrival_jobs_["submit"]
    s, e = world.hole
    assert e - s == WORLD_HORIZON_S and (c - s) % (7 * DAY) == 0
    assert policy.span_[0] <= s and e <= policy.span_[1]
    copied = src[(src > s) & (src <= e)]
    assert np.array_equal(np.sort(w.submit[n0:]), np.sort(copied[policy.arrival_jobs_["nodes"][
        (src > s) & (src <= e)] <= 80] - s + c))
    # the episode's decision point 0 is the trace's: the same queue, the same features
    sample = generate_sample(table, cluster, WORLD_SPEC)
    real = sample["points"]
    drawn = generate_sample(world.table, world.cluster, WORLD_SPEC)["points"]
    cols = [col for col in real.columns if col.startswith(("f_", "pred_"))]
    assert np.allclose(real[cols].iloc[0].to_numpy(float), drawn[cols].iloc[0].to_numpy(float),
                       equal_nan=True)
    # drawn runtimes of the jobs running and queued then: beyond their elapsed time, within
    # their limit; the jobs that ended before keep the trace's
    changed = np.flatnonzero(w.run[:n0] != table.run[:n0])
    if runtimes:
        assert world.drawn_runtimes > 10 and len(changed) > 5
        ep.sim.run_until(c)
        view = view_from_sim(ep.sim, c, pred_jid=ep.pred, pred_submit=c, pred_limit_s=ep.limit_s,
                             chain_nodes=8)
        alive = set(view.running_id.tolist()) | set(view.pending_id.tolist())
        assert set(changed.tolist()) <= alive
        start = dict(zip(view.running_id.tolist(), view.running_start.tolist()))
        for i in changed.tolist():
            assert w.run[i] <= w.limit[i] and w.run[i] > c - start.get(i, c)
    else:
        assert world.drawn_runtimes == 0 and len(changed) == 0
    # the twin's own world of a view of the drawn world, given that world's runtimes and
    # arrivals, is the drawn world: its x at every candidate submit time is the episode's
    wep = Episode(world.table, world.cluster, WORLD_SPEC)
    asked = 0
    for t, row in wep:
        if row["k"] in (60, 200) and wep.pred_start() >= 0:
            view = view_from_sim(wep.sim, t, pred_jid=wep.pred, pred_submit=wep.t_pred,
                                 pred_limit_s=wep.limit_s, chain_nodes=8)
            both = true_future(wep.sim, view, policy.draw_future(view, policy.rng_for(view, 0)),
                               "both", 72 * 3600)
            offsets = np.array([0, 600, 1800, 6 * 3600])
            x = simulate_leads(view, both, world.cluster, offsets_s=offsets)
            want = drawn["x_h"].to_numpy()[row["k"] + offsets // 600]
            assert np.allclose(x, want), (row["k"], x, want)
            asked += 1
        if row["k"] >= 200:
            break
    assert asked == 2
    # the twin scored in the world: its outcome is one of the world's points, which the
    # oracle's minimum lies under
    train = jobs[jobs["submit"] < "2023-01-29"]
    data = SampleSet(pd.DataFrame([sample["sample"]]), real)
    rows, _ = run_twin_model_worlds(TwinPolicy(K=2).fit(trace=train, seed=0), data, table, cluster,
                                    train=train, sample_ids=[7], seed=5, runtimes=runtimes)
    assert len(rows) == 1 and rows["world_arrivals"].iloc[0] > 100
    assert rows["oracle_cost"].iloc[0] <= outcome_cost(rows["x_h"], 1.0, 0.5)[0] + 1e-9


@pytest.mark.parametrize("rule", ["quantile", "plan"])
@pytest.mark.parametrize("every_h", [1.25, 6.0], ids=["backlog", "idle"])
def test_the_plan_veto_allows_a_submit_only_where_the_plan_is_late(every_h, rule):
    frame, cluster = _stream(every_h)
    table = JobTable.from_frame(frame)
    spec = SampleSpec(0, "ls6", "validation", 8, pd.Timestamp("2023-01-02"))
    points = generate_sample(table, cluster, spec)["points"]
    policy = TwinPolicy(K=4, gate_h=24, plan_veto=True, rule=rule).fit(trace=frame, seed=0)
    rec: list = []
    k, _ = run_twin_episode(policy, table, cluster, spec, points, record=rec)
    allowed = np.array([ok for _, _, ok in rec])
    if every_h < 2:
        # a backlog: the plan starts the successor after the predecessor's end, the veto lets
        # the twin submit early, and the early submit pays off
        assert allowed.any()
        assert k < len(points) - 1 and points["x_h"].iloc[k] < points["x_h"].iloc[-1] - 6
    else:
        # an idle cluster: a successor submitted now would start at once, never allowed
        assert not allowed.any() and k == len(points) - 1
    # where the veto says no, the rule simulates no draw
    assert all(np.isnan(x).all() for _, x, ok in rec if not ok)
    assert policy.get_params()["plan_veto"] is True


def test_recorded_draws_give_the_decisions_of_every_setting(tiny_run):
    # what the tuning scores a candidate by (the first point where the m-th smallest of the K
    # recorded draws exceeds the tolerance, where the veto allows) is exactly what the twin
    # with that setting decides when it is replayed with early stopping
    ls6 = tiny_run / "results" / "tiny" / "ls6"
    cluster = cluster_for("ls6", "calibrated")  # what rule decide_twin reads for tiny's ls6
    train = with_inferred_dependencies(pd.read_parquet(ls6 / "trace" / "train.parquet"), cluster)
    table = JobTable.from_frame(pd.read_parquet(ls6 / "trace" / "validation.parquet"))
    data = SampleSet.load(ls6 / "calibrated" / "samples")
    K = 4
    recorder = TwinPolicy(K=K, early_stop=False, sign_only=False, cap_h=0.5).fit(trace=train, seed=3)
    for n in (1, 8):
        ids = ids_in_time_order(data, n)
        draws, allowed, timing = record_draws(recorder, data, table, cluster, sample_ids=ids)
        part = data.subset(ids)
        assert draws.shape == (len(part.points), K)
        assert (timing["draws"][timing["draws"] > 0] == K).all()  # no early stop
        for m, tol, veto in [(1, 60, False), (3, 60, False), (2, 900, True), (3, 1800, True)]:
            mask = quantile_submits(draws, m, tol) & (allowed if veto else True)
            first = first_true_grouped(mask, part.points["k"].to_numpy(), part.point_starts())
            twin = TwinPolicy(K=K, tau=m / K, tolerance_s=tol, plan_veto=veto).fit(trace=train, seed=3)
            res, _ = run_twin(twin, data, table, cluster, sample_ids=ids)
            assert list(res["k"]) == list(first), (n, m, tol, veto)
    with pytest.raises(TwinEvalError, match="early_stop and sign_only off"):
        record_draws(TwinPolicy(K=K).fit(trace=train), data, table, cluster, sample_ids=ids)


def test_recorded_plan_draws_give_the_decisions_of_every_overlap_weight(tiny_run):
    # the plan rule's tuning reads each candidate weight's first submit off one recording (every
    # candidate submit time's draws at every point); the twin with that weight, replayed,
    # decides exactly that. Where the veto says no nothing is drawn and nothing submits.
    ls6 = tiny_run / "results" / "tiny" / "ls6"
    cluster = cluster_for("ls6", "calibrated")
    train = with_inferred_dependencies(pd.read_parquet(ls6 / "trace" / "train.parquet"), cluster)
    table = JobTable.from_frame(pd.read_parquet(ls6 / "trace" / "validation.parquet"))
    data = SampleSet.load(ls6 / "calibrated" / "samples")
    K = 4
    recorder = TwinPolicy(K=K, rule="plan", plan_veto=True).fit(trace=train, seed=3)
    seen_submit = seen_wait = False
    for n in (1, 8):
        ids = ids_in_time_order(data, n)
        draws, allowed, _ = record_plan_draws(recorder, data, table, cluster, sample_ids=ids)
        part = data.subset(ids)
        assert len(draws) == len(part.points)
        asked = np.array([x is not None and not np.isnan(x).all() for x in draws])
        assert not (asked & ~allowed).any()  # vetoed points draw nothing
        assert all(x.shape[0] == K for x in draws[asked])
        for c_O in (0.5, 1.0, 4.0):
            mask = plan_submits(draws, 1.0, c_O)
            seen_submit |= bool(mask.any())
            seen_wait |= bool((asked & ~mask).any())
            first = first_true_grouped(mask, part.points["k"].to_numpy(), part.point_starts())
            twin = TwinPolicy(K=K, rule="plan", plan_veto=True, c_O=c_O).fit(trace=train, seed=3)
            res, _ = run_twin(twin, data, table, cluster, sample_ids=ids)
            assert list(res["k"]) == list(first), (n, c_O)
        # stopped once every weight has submitted: the same first submits
        short, _, timing = record_plan_draws(recorder, data, table, cluster, sample_ids=ids,
                                             c_I=1.0, overlap_costs=[0.5, 1.0, 4.0])
        assert sum(x is not None for x in short) <= sum(x is not None for x in draws)
        for c_O in (0.5, 1.0, 4.0):
            assert list(first_true_grouped(plan_submits(short, 1.0, c_O), part.points["k"].to_numpy(),
                                           part.point_starts())) == \
                list(first_true_grouped(plan_submits(draws, 1.0, c_O), part.points["k"].to_numpy(),
                                        part.point_starts()))
    assert seen_submit and seen_wait  # the weights decide something here
    with pytest.raises(TwinEvalError, match="needs the plan rule"):
        record_plan_draws(TwinPolicy(K=K).fit(trace=train), data, table, cluster, sample_ids=ids)


def test_the_plan_rule_is_tuned_by_its_overlap_weight(tiny_run):
    ls6 = tiny_run / "results" / "tiny" / "ls6"
    data = SampleSet.load(ls6 / "calibrated" / "samples")
    train = pd.read_parquet(ls6 / "trace" / "train.parquet")
    cluster = cluster_for("ls6", "calibrated")
    told: list = []
    replayed, _ = replay_twin(train, pd.read_parquet(ls6 / "trace" / "validation.parquet"), data,
                              cluster, chain_nodes=8, seed=3, params={"K": 4, "rule": "plan"},
                              tune={"every": 1, "n_blocks": 2}, echo=told.append)
    info = replayed.info_["tuning"]
    sweep, chosen = pd.DataFrame(info["sweep"]), info["chosen"]
    assert sorted(sweep["c_O"]) == sorted(w * 0.5 for w in TUNE_OVERLAP_WEIGHTS)
    best = sweep.loc[sweep["cost_ratio"].idxmin()]
    assert chosen == {"c_O": float(best["c_O"]), "plan_veto": True}
    # the validation replay is the chosen twin's, the veto it was tuned with on
    assert {k: replayed.params[k] for k in chosen} == chosen and replayed.params["rule"] == "plan"
    assert info["untuned_cost_ratio"] >= info["tune_cost_ratio"]
    assert info["tune_samples"] == 4 and info["tune_blocks"] == 2
    assert len(told) == 1 and str(chosen) in told[0]
    with pytest.raises(TwinEvalError, match="keeps the plan veto"):
        tune_twin(train, data, cluster, chain_nodes=8, params={"K": 4, "rule": "plan",
                                                               "plan_veto": False})


def test_the_workflow_tunes_the_twin_on_the_training_samples(tiny_run):
    # rule decide_twin for twin_tuned: the choice is the sweep's best over the candidates, made
    # on training samples only, and the stored decisions are the chosen twin's
    from mirage.policies.fitting import load_fitted
    from mirage.policies.replayed import ReplayedDecisions

    ls6 = tiny_run / "results" / "tiny" / "ls6"
    for n in (1, 8):
        out = ls6 / "calibrated" / "models" / f"n{n}" / "twin_tuned"
        fitted = load_fitted(out)
        assert isinstance(fitted, ReplayedDecisions) and fitted.name == "twin_tuned"
        info = json.loads((out / "fit.json").read_text())
        tuning = info["replayed"]["tuning"]
        sweep = pd.DataFrame(tuning["sweep"])
        K = info["params"]["K"]
        assert K == 4 and len(sweep) == 2 * (K - 1) * 5  # veto x m in 1..K-1 x 5 tolerances
        best = sweep.loc[sweep["cost_ratio"].idxmin()]
        chosen = tuning["chosen"]
        assert chosen == {"tau": int(best["m"]) / K, "tolerance_s": int(best["tolerance_s"]),
                          "plan_veto": bool(best["plan_veto"])}
        assert {k: info["params"][k] for k in chosen} == chosen  # the replayed twin's setting
        assert tuning["untuned_cost_ratio"] >= tuning["tune_cost_ratio"]
        assert tuning["tune_samples"] == 4 and tuning["tune_blocks"] == 2  # tiny: 4 per size
        data = SampleSet.load(ls6 / "calibrated" / "samples").split("validation")
        part = data.subset(data.samples.loc[data.samples["chain_nodes"] == n, "sample_id"])
        assert list(fitted.first_submit_all(part).index) == list(part.sample_ids)


def test_tuning_refuses_what_it_cannot_tune(tiny_run, tmp_path, capsys):
    from mirage.cli import main

    ls6 = tiny_run / "results" / "tiny" / "ls6"
    data = SampleSet.load(ls6 / "calibrated" / "samples")
    train = pd.read_parquet(ls6 / "trace" / "train.parquet")
    with pytest.raises(TwinEvalError, match="twin_tuned tunes the quantile or the plan rule"):
        tune_twin(train, data, load_cluster("ls6"), chain_nodes=1, params={"K": 4, "rule": "expected"})
    with pytest.raises(TwinEvalError, match="at least 4 training samples"):
        tune_twin(train, data, load_cluster("ls6"), chain_nodes=1, params={"K": 4}, every=2)
    assert main(["samples", "twin", "--cluster", "ls6", "--trace-dir", str(ls6 / "trace"),
                 "--samples", str(ls6 / "calibrated" / "samples"), "--chain-nodes", "1",
                 "--seed", "0", "--params", '{"K": 4, "tune_every": 2}',
                 "--out", str(tmp_path / "o")]) == 2
    assert "tune_every / tune_blocks are twin_tuned's parameters" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_arrival_predictors_find_a_weekly_pattern_from_the_past_alone(tmp_path, capsys):
    from mirage.cli import main
    from mirage.errors import MirageError
    from mirage.bench.twin import bench_twin_arrivals

    # six weeks of one job an hour whose size follows the hour of the day: 8 nodes 09-17 h,
    # 1 node otherwise; four weeks train, the last two validate (the week before is warm-up)
    t0 = pd.Timestamp("2023-01-02")  # a Monday
    submit = pd.date_range(t0, periods=24 * 7 * 6, freq="h") + pd.Timedelta(minutes=1)
    hour = submit.hour.to_numpy()
    jobs = pd.DataFrame({"job_id": [str(i) for i in range(len(submit))], "user": "u",
                         "submit": submit, "start": submit + pd.Timedelta(minutes=1),
                         "end": submit + pd.Timedelta(minutes=31), "time_limit_min": 60,
                         "nodes": np.where((hour >= 9) & (hour < 17), 8, 1)})
    split = t0 + pd.Timedelta(weeks=4)
    trace = tmp_path / "run" / "trace"
    trace.mkdir(parents=True)
    jobs[jobs["submit"] < split].assign(in_window=True).to_parquet(trace / "train.parquet")
    val = jobs[jobs["submit"] >= split - pd.Timedelta(weeks=1)]
    val.assign(in_window=val["submit"] >= split).to_parquet(trace / "validation.parquet")

    table = bench_twin_arrivals(tmp_path / "run", horizons_h=(6.0,))
    row = table.set_index("predictor")
    assert list(row.index) == ["hour_of_week", "last_week", "past", "queue", "training_mean"]
    # the pattern repeats every week: the training week's mean and last week are exact
    assert row.loc["hour_of_week", "mae_node_h"] == pytest.approx(0.0)
    assert row.loc["last_week", "mae_node_h"] == pytest.approx(0.0)
    assert row.loc["hour_of_week", "spearman"] == pytest.approx(1.0)
    assert row.loc["training_mean", "mae_node_h"] > 5.0
    assert np.isnan(row.loc["queue", "mae_node_h"])  # a signal, not an estimate
    # every job starts a minute after its submit: on the hour nothing is queued, a constant
    # whose correlation is undefined
    assert np.isnan(row.loc["queue", "spearman"])
    # a step every hour from the window's first hour while 6 h ahead stays before its last
    # submit (the last hour's at 00:01 less a minute): 14 days of hours less 7, plus one
    assert row.loc["past", "steps"] == 14 * 24 - 7 + 1
    assert table.equals(bench_twin_arrivals(tmp_path / "run", horizons_h=(6.0,)))
    assert main(["bench", "twin-arrivals", str(tmp_path / "run"), "--horizons", "6"]) == 0
    assert "| hour_of_week" in capsys.readouterr().out
    with pytest.raises(MirageError, match="Fix:"):
        bench_twin_arrivals(tmp_path / "run", horizons_h=(24.0 * 30,))
    with pytest.raises(MirageError, match="Fix:"):
        bench_twin_arrivals(tmp_path / "none")


def test_the_plan_rule_compares_submits_shortly_before_the_end_too():
    # a big job's end can fix the successor's start hours ahead: every submit until shortly
    # before the predecessor's end then starts early, one at the end late; the rule must have
    # a candidate in between (ls6 sample 1572: 10.7 h left, on time only from 1.3 h before)
    pol = TwinPolicy(rule="plan", step_s=600)
    left = 64 * 600
    offs = pol.lead_offsets(SimpleNamespace(now=1000, pred_end=1000 + left))
    assert offs[0] == 0 and offs[-1] == left
    assert (np.diff(offs) > 0).all() and (offs <= left).all()
    steps = set((offs // 600).tolist())
    assert {1, 2, 4, 8, 16, 32} <= steps  # forward from now
    assert {63, 62, 60, 56, 48} <= steps  # back from the end
    assert list(pol.lead_offsets(SimpleNamespace(now=5, pred_end=5))) == [0]
    assert list(pol.lead_offsets(SimpleNamespace(now=0, pred_end=900))) == [0, 300, 600, 900]
