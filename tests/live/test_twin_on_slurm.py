"""The twin policy on the live side: the queue it decides from, read live (squeue with users
and dependencies, sinfo), and a provisioner's decision from it, on the live test cluster."""

from __future__ import annotations

import numpy as np

from mirage.live.observe import LiveObserver, epoch, now_s
from mirage.live.provision import ChainSpec, Provisioner
from mirage.live.slurm import Slurm
from mirage.sim.synth import synthesize
from mirage.twin.live import load_twin
from mirage.twin.policy import QueueObservation

LIMIT_MIN = 15


def test_the_live_queue_as_the_twin_sees_it_and_its_decision(slurm_cluster, tmp_path):
    c = slurm_cluster
    c.wait_idle()

    def background(cpus, limit, *extra):
        return c.sbatch(f"--uid={c.user2}", "-n", str(cpus), "-t", str(limit), "--output=/dev/null",
                        *extra, "--wrap", "sleep 600")

    try:
        running = [background(6, 30), background(5, 20), background(4, 10)]
        pred = c.sbatch("-n", "1", "-t", str(LIMIT_MIN), "--output=/dev/null", "-J", "svc", "--wrap", "sleep 600")
        c.wait_state([*running, pred], "RUNNING")
        pending = [background(3, 5), background(8, 12)]
        waits = background(2, 7, f"--dependency=afterok:{running[0]}")
        held = background(1, 3, "--hold")
        c.wait_state([*pending, waits, held], "PENDING")
        job = c.sacct_jobs([pred], fields="JobID,Submit,Start", started=True)[str(pred)]
        pred_submit, pred_start = epoch(job["Submit"]), epoch(job["Start"])
        now = now_s()
        live = LiveObserver(Slurm(env=c.env), chain_nodes=1, limit_min=LIMIT_MIN, partition=c.partition,
                            account=c.account, unit="cpus")
        view = live.queue_view(str(pred), pred_submit, pred_start, now=now)

        # what the twin sees: the other running jobs (the predecessor only in pred_*), the
        # eligible pending ones with their users and the dependency, not the held job
        assert view.capacity == 16 and view.now == now
        assert (view.pred_submit, view.pred_start, view.pred_limit_s) == (pred_submit, pred_start, LIMIT_MIN * 60)
        assert sorted(view.running_id.tolist()) == sorted(running)
        assert sorted(zip(view.running_nodes.tolist(), view.running_limit_s.tolist())) == [
            (4, 600), (5, 1200), (6, 1800)]
        assert set(view.running_user) == {c.user2}
        assert sorted(view.pending_id.tolist()) == sorted([*pending, waits])
        assert held not in view.pending_id.tolist()
        dep = dict(zip(view.pending_id.tolist(), view.pending_dep.tolist()))
        assert dep == {pending[0]: -1, pending[1]: -1, waits: running[0]}
        assert np.all(np.diff(view.pending_priority) <= 0)  # Slurm's order, highest first
        assert view.pred_running and view.pred_end == pred_start + LIMIT_MIN * 60
        # the predecessor's priority: what squeue shows for it (kept from its start while it runs)
        shown = c.run("squeue", "-h", "-j", str(pred), "-o", "%Q").stdout.split()
        assert view.pred_priority > 0 and view.pred_priority == float(shown[0])

        # the twin fitted on a cluster's trace decides from that view, through the provisioner
        trace = tmp_path / "trace.parquet"
        synthesize("ls6", "2023-01-01", 14, seed=3).to_parquet(trace)
        policy = load_twin({"trace": str(trace), "cluster": "ls6", "K": 8, "seed": 1})
        simulate = policy.simulator(policy.cluster_)
        submit, x_h = policy.evaluate(view, simulate)
        # (nan: a draw not simulated, the decision settled before; +inf: a drawn world where
        # the successor has not started by the rule's tolerance)
        drawn = x_h[~np.isnan(x_h)]
        assert isinstance(submit, bool) and len(x_h) == 8 and 1 <= len(drawn) <= 8
        # the same view and seed: the same decision
        assert policy.evaluate(view, simulate)[0] == submit
        # asked as every policy is: the observation with the queue view
        assert policy.decide(QueueObservation({}, queue=view)) == submit
        spec = ChainSpec(script="/bin/true", links=2, nodes=1, time_min=LIMIT_MIN, policy="twin",
                         partition=c.partition, account=c.account, unit="cpus")
        prov = Provisioner(spec, tmp_path / "chain", policy, slurm=Slurm(env=c.env))
        prov.state = {"chain_id": "t", "created": now, "links": [
            {"link": 1, "job_id": str(pred), "state": "RUNNING", "submitted": pred_submit, "start": pred_start}]}
        said = prov.act(prov.observer(), dry_run=True)
        assert said.startswith(("submit link 2 (policy:", "wait (policy:")) and "h left" in said, said
    finally:
        c.run("scancel", "-u", c.user2, check=False)
        c.run("scancel", "-n", "svc", check=False)
