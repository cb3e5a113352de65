"""Warm start, snapshots and what-if queries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mirage.sim import INF, compat_cluster, replay, to_seconds, warm_start
from mirage.sim.whatif import sweep_successor, what_if

from .scenarios import T0, make_cluster, make_table, minutes


def _random_jobs(n=300, seed=1, span_min=3000, users=12):
    rng = np.random.default_rng(seed)
    jobs = []
    for k in range(n):
        sub = int(rng.integers(0, span_min))
        run = int(rng.integers(5, 600))
        lim = run + int(rng.integers(0, 300))
        jobs.append({"submit": sub, "start": sub + int(rng.integers(0, 400)), "run": run,
                     "limit": lim, "nodes": int(rng.choice([1, 1, 1, 2, 4, 8])),
                     "user": f"u{int(rng.integers(0, users))}", "prio": int(rng.integers(1000, 1500))})
    return jobs


@pytest.fixture(scope="module")
def busy_table():
    return make_table(_random_jobs())


def test_warm_start_reproduces_recorded_running_and_pending_sets(busy_table):
    tab = busy_table
    prof = make_cluster(16)
    for t in (to_seconds(T0) + 600 * k for k in (3, 17, 40)):
        sim = warm_start(tab, prof, t)
        # the pass at T0 has not run yet: the state is the trace's
        running = {jid for jid, *_ in sim.running_jobs()}
        rec = set(np.flatnonzero((tab.start <= t) & (tab.end > t)).tolist())
        assert running == rec
        pend = {p[0] for p in sim.pending_jobs()}
        assert pend == set(np.flatnonzero((tab.submit <= t) & (tab.start > t)).tolist())
        # running jobs keep their recorded start and end
        for jid, start, exp_end, n, _ in sim.running_jobs():
            assert start == tab.start[jid] and n == tab.nodes[jid]
            assert sim.end_of(jid) == tab.end[jid]


def test_cold_start_is_empty(busy_table):
    tab = busy_table
    t = to_seconds(T0) + 6000
    sim = warm_start(tab, make_cluster(16, warm=False), t)
    assert sim.running_jobs() == [] and sim.pending_jobs() == []


@pytest.mark.parametrize("mode", ["easy", "conservative"])
def test_whatif_from_snapshot_equals_full_rerun(busy_table, mode):
    tab = busy_table
    prof = make_cluster(16, mode=mode, interval_s=30, max_jobs=3, w_trace=1.0, w_size=50.0)
    t0 = to_seconds(T0) + 1200
    for s_min, nodes, lim in ((700, 4, 600), (1500, 8, 2880), (2222, 1, 90), (2600, 16, 300)):
        s = to_seconds(T0) + s_min * 60
        full = warm_start(tab, prof, t0, record=False)
        jid = full.insert_job(s, nodes, lim * 60)
        assert full.run_until(INF, stop_jid=jid)
        expect = full.starts[jid]
        base = warm_start(tab, prof, t0, record=False)
        for snap_at in (s - 1, s - 3600, t0):
            b = warm_start(tab, prof, t0, record=False)
            b.run_until(snap_at)
            snap = b.snapshot()
            assert what_if(snap, s, nodes, lim) == expect
            # the snapshot is reusable and the base is untouched
            assert what_if(snap, s, nodes, lim) == expect
        base.run_until(s - 1)
        assert what_if(base, s, nodes, lim) == expect
        assert not base.starts


def test_determinism(busy_table):
    prof = make_cluster(16, mode="conservative", interval_s=30, max_jobs=3, w_trace=1.0)
    a = replay(busy_table, prof, to_seconds(T0) - 1)
    b = replay(busy_table, prof, to_seconds(T0) - 1)
    assert (a == b).all() and (a >= 0).all()


def test_replay_respects_capacity_and_limits(busy_table):
    tab = busy_table
    prof = make_cluster(16, max_jobs=3)
    st = replay(tab, prof, to_seconds(T0) - 1)
    end = st + tab.run
    assert (st >= tab.submit).all()
    for t in np.unique(st):
        on = (st <= t) & (end > t)
        assert tab.nodes[on].sum() <= 16
        for u in np.unique(tab.user[on]):
            assert (on & (tab.user == u)).sum() <= 3


def test_service_job_runs_to_its_limit_and_chains(busy_table):
    tab = busy_table
    prof = make_cluster(16)
    sim = warm_start(tab, prof, to_seconds(T0))
    p = sim.insert_job(to_seconds(T0) + 600, 2, 3600)
    sim.run_until(to_seconds(T0) + 7200)
    st = sim.start_of(p)
    assert st is not None and sim.end_of(p) == st + 3600
    q = sim.insert_job(sim.now, 2, 3600)
    sim.run_until(INF, stop_jid=q)
    assert sim.start_of(q) >= sim.now - 1


def test_sweep_matches_individual_whatifs(busy_table):
    tab = busy_table
    prof = make_cluster(16, interval_s=30)
    t0 = to_seconds(T0) + 600
    base = warm_start(tab, prof, t0, record=False)
    ps = to_seconds(T0) + 1800
    pj = base.insert_job(ps, 4, 240 * 60)
    pts = sweep_successor(base, pj, nodes=4, limit_min=240)
    assert pts[0].t == ps and len(pts) >= 240 // 10
    pe = base.end_of(pj)
    assert pts[-1].t == pe and all(p.pred_end == pe for p in pts)
    for p in pts[::7]:
        ref = warm_start(tab, prof, t0, record=False)
        ref.insert_job(ps, 4, 240 * 60)  # the same predecessor, so the state matches
        ref.run_until(p.t)
        assert what_if(ref, p.t, 4, 240) == p.start
        assert p.x_h == pytest.approx((p.start - pe) / 3600)


def test_compat_reproduces_reference_behaviour():
    # 100 one-node jobs of 60 min at 0: the reference fits 88 at once (its hard-coded size)
    # whatever the trace's cluster, and starts a window empty: the job running before the
    # window start (recorded) does not exist for it.
    jobs = [{"submit": -30, "start": -30, "run": 120, "nodes": 40}]
    jobs += [{"submit": 0, "run": 60, "nodes": 1} for _ in range(100)]
    jobs += [{"submit": 1, "run": 10, "nodes": 88}]
    tab = make_table(jobs)
    prof = compat_cluster("test")
    st = replay(tab, prof, to_seconds(T0))
    m = np.array([minutes(int(x)) if x >= 0 else np.nan for x in st])
    ones = m[(tab.nodes == 1)]
    assert (ones == 0).sum() == 88 and (ones == 70).sum() == 12
    assert np.isnan(m[tab.nodes == 40]).all()  # the pre-window job is not simulated
    # the 88-node job (size factor 100 * 88/88 = 100 > age 7000 * 59 min / 7 d = 41) goes before
    # the 12 waiting one-node jobs at 60, and its conservative reservation keeps them out
    assert m[tab.nodes == 88][0] == 60
    assert (m[(tab.nodes == 1) & (m > 0)] == 70).all()
    # warm (calibrated-style) start on the same trace sees the 40-node job running
    warm = replay(tab, make_cluster(88, w_size=100.0, w_age=7000.0), to_seconds(T0))
    assert warm[tab.nodes == 40][0] == tab.start[tab.nodes == 40][0]


def _idle_waiter_trace():
    """At T0 + 10 min, job 1 is queued although 3 of 4 nodes are idle and starts at 100 min in
    the trace; job 2 (4 nodes) cannot fit then. The table and the warm start time."""
    jobs = [
        {"submit": 0, "run": 60, "nodes": 1},
        {"submit": 5, "start": 100, "run": 10, "nodes": 1},
        {"submit": 6, "start": 61, "run": 10, "nodes": 4},
    ]
    return make_table(jobs), to_seconds(T0) + 600


def test_pin_idle_waiters_starts_them_as_recorded():
    # job 1 was not eligible, so it starts at 100; job 2 is scheduled normally
    tab, t0 = _idle_waiter_trace()
    on = replay(tab, make_cluster(4).with_(pin_idle_waiters=True), t0)
    off = replay(tab, make_cluster(4), t0)
    assert [minutes(int(x)) for x in on] == [0, 100, 60]
    assert [minutes(int(x)) for x in off] == [0, 10, 60]


def test_pin_idle_waiters_pins_only_jobs_that_waited_longer_than_the_grace():
    # job 1 starts 90 min after the warm start although nodes were idle then: pinned when the
    # grace is shorter than that, simulated (starts at once) when it is longer
    tab, t0 = _idle_waiter_trace()
    pin = make_cluster(4).with_(pin_idle_waiters=True)
    assert pin.pin_idle_grace_s == 600  # the default: 10 min
    assert [minutes(int(x)) for x in replay(tab, pin.with_(pin_idle_grace_s=3600), t0)] == [0, 100, 60]
    assert [minutes(int(x)) for x in replay(tab, pin.with_(pin_idle_grace_s=7200), t0)] == [0, 10, 60]


def test_the_pin_grace_is_read_from_the_description_and_checked(tmp_path):
    import yaml

    from mirage.errors import ConfigError
    from mirage.sim.cluster import load_cluster

    hand = Path(__file__).resolve().parents[2] / "config" / "clusters" / "ls6.yaml"
    doc = yaml.safe_load(hand.read_text())
    assert load_cluster("ls6", hand).pin_idle_grace_s == 600  # absent: 10 min
    doc["model"]["pin_idle_grace_s"] = {"value": 172800, "source": "test"}
    path = tmp_path / "ls6.yaml"
    path.write_text(yaml.safe_dump(doc))
    d = load_cluster("ls6", path)
    assert d.pin_idle_grace_s == 172800 and d.sources["model.pin_idle_grace_s"] == "test"
    doc["model"]["pin_idle_grace_s"]["value"] = -1
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="pin_idle_grace_s"):
        load_cluster("ls6", path)
