"""Cluster descriptions, fidelity metrics, the command line, and the real ls6 trace (skipped if absent)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mirage.errors import ConfigError
from mirage.sim import compat_cluster, load_cluster, replay, to_seconds, warm_start
from mirage.sim.fidelity import (Period, default_periods, evaluate_period, loo_metrics,
                                 paired_fidelity_difference, replay_ape, replay_metrics)
from mirage.sim.inference import infer_capacity, infer_dependencies, infer_user_max_jobs

from .scenarios import T0, make_cluster, make_table


@pytest.mark.parametrize("cluster", ["ls6", "frontera", "longhorn"])
def test_cluster_descriptions_load_with_a_source_for_every_value(cluster):
    p = load_cluster(cluster)
    assert p.cluster == cluster and p.nodes >= 80
    for key in ("nodes", "capacity_schedule", "priority.weight_age", "backfill.bf_window",
                "backfill.bf_resolution", "user_limits.max_running_jobs", "model.warm_start"):
        assert p.sources.get(key), key
    assert p.warm_start  # the calibrated mode is the default


def test_compat_yaml_matches_the_builtin_compat_description():
    assert load_cluster("compat").with_(sources={}) == compat_cluster("compat")
    c = compat_cluster("ls6")
    assert c.nodes == 88 and not c.warm_start and c.priority.weight_trace == 0
    assert c.backfill.interval_s == 600 and c.backfill.resolution_s == 600


def test_cluster_description_errors_name_the_fix(tmp_path):
    with pytest.raises(ConfigError, match="Fix"):
        load_cluster("nosuchcluster")
    bad = tmp_path / "x.yaml"
    bad.write_text("cluster: x\nnodes: 12\n")
    with pytest.raises(ConfigError, match="value.*source"):
        load_cluster("x", bad)
    bad.write_text("cluster: x\nnodes: {value: 4, source: s}\nbackfill: {mode: {value: fifo, source: s}}\n")
    with pytest.raises(ConfigError, match="backfill.mode"):
        load_cluster("x", bad)


def test_inferences_on_a_small_trace():
    jobs = [
        {"submit": 0, "run": 60, "user": "a", "nodes": 2},
        {"submit": 0, "start": 61, "run": 30, "user": "a", "nodes": 2},  # waits, starts as 0 ends
        {"submit": 5, "run": 10, "user": "b", "nodes": 1},
    ]
    tab = make_table(jobs)
    dep = infer_dependencies(tab)
    assert dep[1] == 0 and dep[0] == -1 and dep[2] == -1
    assert infer_user_max_jobs(tab) == {tab.users.index("a"): 1, tab.users.index("b"): 1}
    cap = infer_capacity(tab)
    assert cap[0][1] == 0 and max(n for _, n in cap) == 3


def test_capacity_weeks_are_counted_back_from_the_end_of_what_is_read():
    # 2 nodes busy on day 0, 10 on day 3, 4 on day 8; the training window ends at day 9.5
    day = 24 * 60
    tab = make_table([{"submit": 0, "run": 60, "nodes": 2}, {"submit": 3 * day, "run": 60, "nodes": 10},
                      {"submit": 8 * day, "run": 60, "nodes": 4}])
    until = int(tab.submit[0]) + int(9.5 * day) * 60
    # weeks from the first start: the last one (days 7-14) holds 2.5 days before the end
    assert [n for _, n in infer_capacity(tab)] == [0, 10, 4]
    # counted back from the end: the last week is days 2.5-9.5, a whole week, and holds day 3's 10
    cap = infer_capacity(tab, until=until)
    assert [n for _, n in cap] == [0, 2, 10]
    assert cap[1][0] == int(tab.start.min()) and cap[2][0] == until - 7 * day * 60


def test_metrics():
    sub = np.array([0, 0, 0, 0])
    real = np.array([0, 3600, 7200, 36000])
    m = loo_metrics(np.array([0, 0, 7200 + 1800, 36000]), real, sub)
    assert m["loo_mae_h"] == pytest.approx((0 + 1 + 0.5 + 0) / 4)
    assert m["loo_within_1h"] == 1.0 and m["loo_median_h"] == pytest.approx(0.25)
    day = pd.date_range("2023-01-01", periods=10, freq="D")
    a = pd.Series(np.arange(1, 11, dtype=float), index=day)
    r = replay_metrics(a * 2, a)
    assert r["replay_corr"] == pytest.approx(1.0) and r["replay_mape"] == pytest.approx(1.0)
    assert replay_metrics(a * 0, a)["replay_corr"] is None


def test_paired_fidelity_difference_tells_a_real_gain_from_noise():
    rng = np.random.default_rng(3)
    day = pd.date_range("2023-03-01", periods=31, freq="D")
    real = pd.Series(rng.uniform(1, 3, 31), index=day)
    close, far = real * 1.05, real * 1.6  # replay APE 0.05 and 0.6 on every day
    err_b = rng.exponential(1.0, 400)
    # a errs less on every job and on every day: better on all three figures
    d = paired_fidelity_difference(err_b * 0.5, err_b, replay_ape(close, real), replay_ape(far, real))
    assert {k: v["verdict"] for k, v in d.items()} == {
        "loo_mae_h": "better", "loo_median_h": "better", "replay_mape": "better"}
    assert d["replay_mape"]["diff"] == pytest.approx(0.05 - 0.6)
    assert d["replay_mape"]["diff"] == pytest.approx(replay_metrics(close, real)["replay_mape"]
                                                      - replay_metrics(far, real)["replay_mape"])
    assert d["loo_mae_h"]["low"] <= d["loo_mae_h"]["diff"] <= d["loo_mae_h"]["high"] < 0
    # the other way round: worse; and two predictors that differ only by the jobs' own noise
    # (a shuffled copy of the same errors) are within noise
    assert paired_fidelity_difference(err_b, err_b * 0.5, replay_ape(far, real),
                                      replay_ape(close, real))["loo_mae_h"]["verdict"] == "worse"
    same = paired_fidelity_difference(rng.permutation(err_b), err_b, replay_ape(close, real),
                                      replay_ape(close * rng.uniform(0.9, 1.1, 31), real))
    assert same["loo_mae_h"]["diff"] == pytest.approx(0.0, abs=1e-12)
    assert {v["verdict"] for v in same.values()} == {"within noise"}


def test_fidelity_on_a_hand_made_trace():
    rng = np.random.default_rng(3)
    jobs = []
    for k in range(200):
        s = int(rng.integers(0, 4 * 1440))
        jobs.append({"submit": s, "start": s + int(rng.integers(0, 120)), "run": 1440,
                     "limit": 1440 + 60 * int(rng.integers(0, 24)), "nodes": 1,
                     "user": f"u{k % 7}"})
    tab = make_table(jobs)
    per = Period("test", to_seconds(T0), to_seconds(T0) + 4 * 86400)
    points = []
    res = evaluate_period(tab, make_cluster(40), per, compat=compat_cluster("test"), points=points)
    for key in ("loo_mae_h", "loo_median_h", "loo_within_1h", "replay_corr", "replay_mape"):
        assert set(res[key]) == {"sim", "zero_wait", "compat"}
    assert res["period"]["long_jobs"] == 200
    # the leave-one-out jobs behind the figures: one row each, the report's metrics from them
    (pts,) = points
    assert len(pts) == 200 and (pts["period"] == "test").all()
    for pred, col in (("sim", "sim_start"), ("compat", "compat_start"), ("zero_wait", "submit")):
        start = pts[col].to_numpy("datetime64[s]").astype(np.int64)
        m = loo_metrics(start, pts["real_start"].to_numpy("datetime64[s]").astype(np.int64),
                        pts["submit"].to_numpy("datetime64[s]").astype(np.int64))
        assert m["loo_mae_h"] == pytest.approx(res["loo_mae_h"][pred])
    assert len(default_periods(tab)) == 1  # the reference windows are outside this trace
    # a report's periods share each job's leave-one-out start: the same figures, computed once
    cache = {}
    half = Period("half", per.start, per.start + 2 * 86400)
    first = evaluate_period(tab, make_cluster(40), half, compat=compat_cluster("test"), loo_cache=cache)
    n_half = len(cache)
    assert 0 < n_half < 200
    again = evaluate_period(tab, make_cluster(40), per, compat=compat_cluster("test"), loo_cache=cache)
    assert len(cache) == 200
    assert again["loo_mae_h"] == res["loo_mae_h"] and again["loo_median_h"] == res["loo_median_h"]
    alone = evaluate_period(tab, make_cluster(40), half, compat=compat_cluster("test"))
    assert first["loo_mae_h"] == alone["loo_mae_h"]
    # a capped period scores a seeded sample of its long jobs: the same seed, the same jobs and
    # figures (each job's prediction is the one of the full run); another seed, other jobs
    capped = []
    some = evaluate_period(tab, make_cluster(40), per, compat=compat_cluster("test"), points=capped,
                           loo_jobs=50, seed=3)
    assert some["period"]["long_jobs"] == 200 and some["period"]["loo_jobs"] == 50
    again = []
    evaluate_period(tab, make_cluster(40), per, compat=compat_cluster("test"), points=again,
                    loo_jobs=50, seed=3)
    other = []
    evaluate_period(tab, make_cluster(40), per, compat=compat_cluster("test"), points=other,
                    loo_jobs=50, seed=4)
    assert capped[0]["job_id"].tolist() == again[0]["job_id"].tolist()
    assert capped[0]["job_id"].tolist() != other[0]["job_id"].tolist()
    full = pts.set_index("job_id").loc[capped[0]["job_id"], "sim_start"]
    assert (full.to_numpy() == capped[0]["sim_start"].to_numpy()).all()


def test_cli_replay_and_whatif(tmp_path, capsys):
    from mirage.sim.cli import main

    jobs = [{"submit": k * 10, "start": k * 10 + 5, "run": 60, "nodes": 1 + k % 3} for k in range(40)]
    df = pd.DataFrame()
    tab = make_table(jobs)
    df = pd.DataFrame({
        "job_id": tab.job_id.astype(str), "user": "u", "submit": tab.submit.astype("datetime64[s]"),
        "start": tab.start.astype("datetime64[s]"), "end": tab.end.astype("datetime64[s]"),
        "time_limit_min": pd.array(tab.limit // 60, dtype="Int64"),
        "nodes": pd.array(tab.nodes, dtype="Int64"), "priority": pd.array([1000] * 40, dtype="Int64"),
    })
    src = tmp_path / "t.parquet"
    df.to_parquet(src)
    prof = tmp_path / "p.yaml"
    prof.write_text("cluster: t\nnodes: {value: 4, source: test}\n")
    out = tmp_path / "r.csv"
    assert main(["sim", "replay", str(src), "--cluster", "t", "--cluster-file", str(prof),
                 "--out", str(out)]) == 0
    assert len(pd.read_csv(out)) == 40
    assert main(["sim", "whatif", str(src), "--cluster", "t", "--cluster-file", str(prof),
                 "--at", "2023-01-01T02:00:00", "--nodes", "2", "--limit-min", "60"]) == 0
    assert "starts at" in capsys.readouterr().out
    assert main(["sim", "replay", str(tmp_path / "missing.log"), "--cluster", "t",
                 "--out", str(out)]) == 2
    assert "Fix" in capsys.readouterr().err


# ----------------------------------------------------------------------------- real trace
@pytest.mark.real_trace
def test_real_warm_start_reproduces_recorded_running_set(real_table):
    tab = real_table
    prof = load_cluster("ls6")
    for ts in ("2022-11-15T08:00:00", "2023-01-20T13:30:00", "2023-03-02T00:00:00"):
        t = to_seconds(ts)
        sim = warm_start(tab, prof, t)
        rec = set(np.flatnonzero((tab.start <= t) & (tab.end > t)).tolist())
        assert {j for j, *_ in sim.running_jobs()} == rec
        assert sim.used == tab.nodes[list(rec)].sum()
        assert len(sim.pending_jobs()) == int(((tab.submit <= t) & (tab.start > t)).sum())


@pytest.mark.real_trace
def test_real_whatif_equals_rerun_and_replay_is_fast(real_table):
    import time

    tab = real_table
    prof = load_cluster("ls6")
    t0 = to_seconds("2023-03-01T00:00:00")
    s = to_seconds("2023-03-02T06:00:00")
    full = warm_start(tab, prof, t0, record=False)
    jid = full.insert_job(s, 1, 2880 * 60)
    full.run_until(stop_jid=jid)
    base = warm_start(tab, prof, t0, record=False)
    base.run_until(s - 600)
    from mirage.sim.whatif import what_if

    assert what_if(base.snapshot(), s, 1, 2880) == full.starts[jid]
    t = time.perf_counter()
    st = replay(tab, prof)
    assert (st >= tab.submit).all()
    assert time.perf_counter() - t < 20  # generous: a smoke check, the benchmark measures speed


@pytest.mark.real_trace
def test_real_fidelity_window_beats_zero_wait_on_mae(real_table):
    tab = real_table
    prof = load_cluster("ls6")
    per = default_periods(tab)[1]
    res = evaluate_period(tab, prof, per)
    assert res["loo_mae_h"]["sim"] < res["loo_mae_h"]["zero_wait"]
    assert res["replay_mape"]["sim"] < res["replay_mape"]["compat"]
    assert res["replay_corr"]["sim"] > 0.5
