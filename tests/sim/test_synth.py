"""Synthetic traces: determinism, schedule invariants, the simulator's scheduling of a small
demand, realism against the real ls6 trace."""


import numpy as np
import pandas as pd
import pytest

from mirage.traces.summary import compare_summaries, trace_summary
from mirage.traces.schema import COLUMNS
from mirage.sim.synth import schedule, synthesize
from mirage.traces.synth import DEFAULT_SCHEDULER, Demand
from mirage.traces.synth import CALIBRATION
from paths import LS6

LS6_LOG = LS6
# The real trace's main period: submits from 2022-11-01 to 2023-03-31 inclusive.
MAIN_START, MAIN_END = pd.Timestamp("2022-11-01"), pd.Timestamp("2023-04-01")
MAIN_DAYS = (MAIN_END - MAIN_START).days  # 151
# Calibration was checked over seeds 0-9 with the simulator's schedule (share waiting > 1 h:
# 0.25-0.47, mean 0.35, against 0.27 real; mean busy nodes 50-62 against 59; the generator's
# former scheduler of its own gave the same to +-0.013 and identical busy nodes). Seed 1 is near that mean; seed 0 is the
# heaviest of the ten and exceeds WAIT_OVER_1H_ABS (see the synth module's known gaps).
SEED = 1

# Tolerances of the synthetic ls6 profile against the real one. Marginals that are drawn
# directly from measured mixes must match closely; what emerges from the scheduler (busy
# nodes, waits) is allowed more slack, because the FIFO + EASY model lacks fairshare,
# reservations and outages, and the load regimes are random.
JOBS_PER_DAY_REL = 0.25  # jobs/day within 25 %
HOUR_SHARE_ABS = 0.02  # each hour-of-day share within 2 points
WEEKDAY_SHARE_ABS = 0.03  # each weekday share within 3 points
NODE_MIX_ABS = 0.08  # each node-count class share within 0.08
LIMIT_48H_ABS = 0.10  # share of 48 h limits within 0.1
RATIO_MEDIAN_ABS = 0.15  # median runtime/limit within 0.15
BUSY_MEAN_REL = 0.30  # mean busy nodes within 30 %
DAILY_BUSY_MEDIAN_REL = 0.30  # median of daily mean busy nodes within 30 %
WAIT_OVER_1H_ABS = 0.10  # share of jobs waiting > 1 h within 0.1
USERS_REL = 0.30  # distinct users within 30 %
# Every load level must cover at least this share of days (long jobs' daily mean wait).
MIN_LOAD_LEVEL_SHARE = 0.10


@pytest.fixture(scope="module")
def synth_ls6() -> pd.DataFrame:
    return synthesize("ls6", MAIN_START, MAIN_DAYS, seed=SEED)


@pytest.fixture(scope="module")
def real_ls6() -> pd.DataFrame:
    if not LS6_LOG.exists():
        pytest.skip(f"real trace not available at {LS6_LOG}")
    from mirage.traces.clean import clean_trace

    clean, _, _ = clean_trace(LS6_LOG, cluster="ls6")
    return clean


def test_same_seed_same_table_other_seed_differs():
    a = synthesize("ls6", "2023-01-02", 10, seed=7)
    b = synthesize("ls6", "2023-01-02", 10, seed=7)
    c = synthesize("ls6", "2023-01-02", 10, seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


@pytest.mark.parametrize("cluster", sorted(CALIBRATION))
def test_schedule_invariants(cluster):
    df = synthesize(cluster, "2022-11-01", 21, seed=3)
    assert list(df.columns) == list(COLUMNS)
    assert dict(df.dtypes.astype(str)) == {c: str(pd.Series([], dtype=t).dtype) for c, t in COLUMNS.items()}
    assert len(df) > 1000
    assert (df["cluster"] == cluster).all()
    assert df["job_id"].is_unique
    assert df["line"].tolist() == list(range(1, len(df) + 1))
    assert (df["submit"] <= df["start"]).all() and (df["start"] <= df["end"]).all()
    run_min = (df["end"] - df["start"]).dt.total_seconds() / 60
    assert (run_min <= df["time_limit_min"]).all()
    assert (df["nodes"] >= 1).all() and (df["time_limit_min"] >= 1).all()
    assert df["user"].str.fullmatch(r"\d{5}").all()
    assert (df["exit_code"] == "0:0").all() and (df["priority"] >= 1000).all()
    assert df["submit"].is_monotonic_increasing
    # Jobs submitted before the window are only the warm-up's leftovers, running at its start.
    early = df[df["submit"] < pd.Timestamp("2022-11-01")]
    assert (early["end"] > pd.Timestamp("2022-11-01")).all()


def test_schedule_respects_capacity_user_limit_and_dependencies(synth_ls6):
    df = synth_ls6
    ls6 = CALIBRATION["ls6"]
    prof = trace_summary(df, MAIN_START, MAIN_END)
    assert prof["busy_nodes_max"] <= ls6["capacity_changes"][0][1]
    assert prof["max_running_per_user"] <= ls6["user_running_limit"]
    before = trace_summary(df, MAIN_START, pd.Timestamp(ls6["capacity_changes"][0][0]))
    assert before["busy_nodes_max"] <= ls6["initial_capacity"]
    dep = df[df["depends_on"].notna()]
    assert len(dep) > 0
    pred_end = df.set_index("job_id")["end"].reindex(dep["depends_on"]).to_numpy()
    assert (dep["start"].to_numpy() >= pred_end).all()


def test_low_medium_and_heavy_load_all_occur(synth_ls6):
    days = trace_summary(synth_ls6, MAIN_START, MAIN_END)["load_days"]
    assert min(days.values()) >= MIN_LOAD_LEVEL_SHARE, days


@pytest.mark.real_trace
def test_synthetic_ls6_profile_matches_real(synth_ls6, real_ls6):
    syn = trace_summary(synth_ls6, MAIN_START, MAIN_END)
    real = trace_summary(real_ls6, MAIN_START, MAIN_END)
    d = compare_summaries(syn, real)

    assert abs(d["jobs_per_day"]["rel"]) <= JOBS_PER_DAY_REL
    assert d["hour_shares"]["max_abs"] <= HOUR_SHARE_ABS
    assert d["weekday_shares"]["max_abs"] <= WEEKDAY_SHARE_ABS
    assert d["node_mix"]["max_abs"] <= NODE_MIX_ABS
    assert abs(d["limit_48h_share"]["abs"]) <= LIMIT_48H_ABS
    assert abs(d["ratio_quantiles"]["abs"]["q50"]) <= RATIO_MEDIAN_ABS
    assert abs(d["busy_nodes_mean"]["rel"]) <= BUSY_MEAN_REL
    daily = d["daily_busy_quantiles"]
    assert abs(daily["abs"]["q50"]) <= DAILY_BUSY_MEDIAN_REL * daily["b"]["q50"]
    assert abs(d["wait_over_1h_share"]["abs"]) <= WAIT_OVER_1H_ABS
    assert abs(d["users"]["rel"]) <= USERS_REL
    assert d["max_running_per_user"]["a"] <= d["max_running_per_user"]["b"]


def test_params_override_and_unknown_cluster():
    small = synthesize("frontera", "2021-03-01", 5, seed=1,
                       params={"initial_capacity": 10, "node_mix": {1: 1.0}})
    assert (small["nodes"] == 1).all()
    assert trace_summary(small)["busy_nodes_max"] <= 10
    with pytest.raises(ValueError):
        synthesize("nowhere", "2021-03-01", 1, seed=1)
    assert np.isfinite(trace_summary(small)["jobs_per_day"])


def test_a_misspelt_override_is_refused_by_name():
    with pytest.raises(ValueError, match=r"'users\.joins_per_dya'.*joins_per_day"):
        synthesize("ls6", "2022-12-20", 1, seed=1, params={"users": {"joins_per_dya": 3}})


def test_the_workflow_passes_the_configs_overrides_to_the_generator(tmp_path):
    import yaml
    from paths import REPO
    from runs import snakemake

    cfg = yaml.safe_load((REPO / "config" / "tiny.yaml").read_text())
    cluster = next(iter(cfg["clusters"]))
    cfg["clusters"][cluster]["synthetic"]["params"] = {"user_running_limit": 2}
    path = tmp_path / "over.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = snakemake("-n", "-p", "--forceall", "-d", str(tmp_path), "-s", str(REPO / "Snakefile"),
                    "--configfile", str(path), "--until", "synth_trace")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert """--params-json '{"user_running_limit": 2}'""" in res.stdout


def _demand(jobs, capacity=4, user_limit=8, priority=None, scheduler=None):
    """A hand-made demand: ``jobs`` = (submit s, user, nodes, limit min, runtime s, after)."""
    cols = list(zip(*jobs))
    arr = {k: np.asarray(v, dtype=np.int64) for k, v in zip(
        ("submit", "user", "nodes", "limit_min", "runtime", "after"), cols)}
    n = len(jobs)
    arr.update(batch=np.arange(n), priority=np.asarray(priority or [1000] * n))
    extra = {"scheduler": scheduler} if scheduler else {}  # scheduler_for fills in the defaults
    return Demand(cluster="ls6", origin=pd.Timestamp("2023-01-01"), warm=0, jobs=arr,
                  capacity=((0, capacity),), user_running_limit=user_limit, backfill_depth=200,
                  first_job_id=1, **extra)


def test_the_simulator_schedules_the_demand_fifo_with_easy_backfill():
    # 4 nodes. Job 0 holds 3 for an hour; job 1 (4 nodes) is the head and reserves the hour's
    # end; job 2 (1 node, 30 min limit) backfills at once, as it ends before the reservation;
    # job 3 (1 node, 2 h limit) would delay the head, so it waits until the head has run.
    d = _demand([(0, 0, 3, 60, 3600, -1), (10, 1, 4, 60, 1800, -1),
                 (20, 2, 1, 30, 600, -1), (30, 3, 1, 120, 600, -1)])
    assert schedule(d).tolist() == [0, 3600, 20, 5400]


def test_another_scheduler_orders_by_the_recorded_priority_and_plans_every_job():
    # 4 nodes, job 0 holds them all for an hour; jobs 1 and 2 (4 nodes each) wait behind it,
    # job 2 submitted later with a higher recorded priority; job 3 (1 node, 2 h) comes last.
    jobs = [(0, 0, 4, 60, 3600, -1), (10, 1, 4, 60, 1800, -1), (20, 2, 4, 60, 1800, -1),
            (30, 3, 1, 120, 600, -1)]
    prio = [1000, 1000, 5000, 1000]
    # FIFO (the default): job 1 first, whatever the priorities say
    assert schedule(_demand(jobs, priority=prio)).tolist() == [0, 3600, 5400, 7200]
    # multifactor with the recorded priority: job 2 overtakes job 1 (an age weight of 1000
    # over 7 days moves priorities by ~0.03 in 20 s); integer priority, conservative backfill
    # on a 30-s interval and 60-s resolution; the main scheduler starts each at an end
    multi = {"backfill_mode": "conservative", "bf_interval_s": 30, "bf_resolution_s": 60,
             "weight_age": 1000, "max_age_days": 7, "weight_trace": 1.0, "integer": True}
    assert schedule(_demand(jobs, priority=prio, scheduler=multi)).tolist() == [0, 5400, 3600, 7200]
    with pytest.raises(ValueError, match="backfill_mode"):
        schedule(_demand(jobs, scheduler={"backfill_mode": "fifo"}))
    with pytest.raises(ValueError, match=r"'scheduler\.weight_sise'"):
        synthesize("ls6", "2022-12-20", 1, seed=1, params={"scheduler": {"weight_sise": 3}})


def test_the_default_scheduler_section_changes_nothing():
    params = {"initial_capacity": 20, "capacity_changes": [], "jobs_per_day": 40.0}
    plain = synthesize("ls6", "2023-01-01", 6, seed=2, params=params)
    same = synthesize("ls6", "2023-01-01", 6, seed=2, params={**params, "scheduler": dict(DEFAULT_SCHEDULER)})
    assert plain.equals(same)
    other = synthesize("ls6", "2023-01-01", 6, seed=2,
                       params={**params, "scheduler": {"weight_trace": 1.0, "max_age_days": 7}})
    assert not plain["start"].equals(other["start"])


def test_held_jobs_are_skipped_not_blocking():
    # One job at a time for user 0: its second job waits for the first, and the job of user 1
    # behind it in the queue starts at once. Job 3 waits for job 2 (a dependency chain).
    d = _demand([(0, 0, 1, 60, 100, -1), (5, 0, 1, 60, 100, -1), (6, 1, 1, 60, 100, -1),
                 (7, 2, 1, 60, 300, -1), (8, 2, 1, 60, 100, 3)], user_limit=1)
    assert schedule(d).tolist() == [0, 100, 6, 7, 307]


def test_the_generators_own_scheduler_is_written_for_the_calibrated_mode(tmp_path):
    """`description: generator`: the synthetic trace's scheduler, as a description the
    calibrated mode reads back, with a warm start and the chains inferred from the text."""
    import dataclasses

    from mirage.sim.calibrate import write_description
    from mirage.sim.cluster import load_cluster
    from mirage.sim.synth import generator_description, scheduler_for
    from mirage.traces.synth import draw_demand

    params = {"scheduler": {"bf_interval_s": 60}, "capacity_changes": [["2021-03-03T00:00:00", 60]]}
    table, desc = synthesize("frontera", "2021-03-01", 4, seed=3, params=params,
                             with_description=True)
    demand = draw_demand("frontera", "2021-03-01", 4, 3, params)
    own = scheduler_for(demand)
    assert desc.backfill == own.backfill and desc.backfill.interval_s == 60
    assert desc.priority == own.priority and desc.max_jobs_per_user == own.max_jobs_per_user
    assert desc.warm_start and desc.infer_dependencies
    # capacity in epoch seconds: the change falls on its date
    assert [pd.Timestamp(t, unit="s") for t, _ in desc.capacity[1:]] == [pd.Timestamp("2021-03-03")]
    assert generator_description(demand) == desc
    path = write_description(desc, tmp_path / "gen.yaml", header="test")
    back = load_cluster("frontera", path)
    assert dataclasses.replace(back, sources={}) == dataclasses.replace(desc, sources={})
    assert "own scheduler" in path.read_text()
    pd.testing.assert_frame_equal(table, synthesize("frontera", "2021-03-01", 4, seed=3,
                                                    params=params))


def test_training_samples_can_be_spaced_apart_from_the_validation_samples():
    from mirage.samples.shards import Plan

    windows = {"train": ("2021-01-05", "2021-01-15"), "validation": ("2021-01-16", "2021-01-26")}
    same = Plan("ls6", windows, 4, (1, 8)).specs()
    apart = Plan("ls6", windows, 4, (1, 8), train_every_hours=12).specs()
    count = lambda specs, split: sum(s.split == split for s in specs)  # noqa: E731
    # a window's end day counts, and the last 5 days hold no start (the horizon)
    assert count(same, "validation") == count(apart, "validation") == 2 * 6 * 6
    assert count(same, "train") == 3 * count(apart, "train") == 2 * 6 * 6
    assert {s.start for s in apart if s.split == "validation"} == \
        {s.start for s in same if s.split == "validation"}
