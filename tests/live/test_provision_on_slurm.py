"""mirage provision on the live test cluster, time-compressed: links of about a minute, a
decision every 2 s, policy hours scaled by --time-scale 60 (one real second is one policy
minute). The service script ends each link 5 s before its limit, as a checkpointing service
would."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

SERVICE = Path(__file__).with_name("service.sh")
SCALE = "60"


def _provision(c, state_dir: Path, policy: list[str], links: int, env: dict | None = None) -> subprocess.Popen:
    args = [sys.executable, "-m", "mirage", "provision", "run", str(SERVICE), "--links", str(links),
            "--nodes", "1", "--time", "1", *policy, "--state-dir", str(state_dir), "--interval", "2s",
            "--time-scale", SCALE, "--partition", c.partition, "--account", c.account, "--unit", "cpus"]
    log = open(state_dir.parent / f"{state_dir.name}.out", "a")
    return subprocess.Popen(args, env={**c.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT)


def _chain_jobs(c, state_dir: Path) -> dict[int, list[str]]:
    """Every Slurm job ever submitted for the chain, by link, from sacct: read until the
    provisioner's own record of submitted jobs is all there (slurmdbd records jobs late)."""
    state = json.loads((state_dir / "state.json").read_text())
    chain = state["chain_id"]
    submitted = _submitted_ids(state)
    end = time.monotonic() + 60
    while True:
        rows = c.sacct("-S", "now-1day", fields="JobID,JobName,State")
        jobs: dict[int, list[str]] = {}
        for r in rows:
            if r["JobName"].startswith(f"mirage-{chain}-"):
                jobs.setdefault(int(r["JobName"].rsplit("-", 1)[1]), []).append(r["JobID"])
        if submitted <= {i for ids in jobs.values() for i in ids} or time.monotonic() > end:
            return jobs
        time.sleep(1)


def _submitted_ids(state: dict) -> set[str]:
    return {str(r["job_id"]) for r in state["links"] if r.get("job_id")}


def _handovers(state_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (state_dir / "handovers.jsonl").read_text().splitlines()]


def test_idle_cluster_kills_and_a_controller_restart(slurm_cluster, tmp_path):
    c = slurm_cluster
    c.wait_idle()
    state = tmp_path / "chain"
    state.mkdir()
    policy = ["--policy", "fixed_lead", "--policy-param", "lead_h=0.5"]
    # killed right after sbatch accepted link 2 and before the state says so
    proc = _provision(c, state, policy, links=3, env={"MIRAGE_PROVISION_FAILPOINT": "after-sbatch:2"})
    assert proc.wait(timeout=300) == -signal.SIGKILL
    assert [r["job_id"] for r in json.loads((state / "state.json").read_text())["links"]][-1] is None
    # a second provisioner on the same directory is refused while one runs
    proc = _provision(c, state, policy, links=3)
    time.sleep(3)
    second = subprocess.run([sys.executable, "-m", "mirage", "provision", "run", str(SERVICE), "--links", "3",
                             "--nodes", "1", "--time", "1", *policy, "--state-dir", str(state)],
                            env=c.env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 2 and "in use by a running provisioner" in second.stderr
    # the controller restarted mid-chain (while links 1 and 2 run), then the provisioner
    # killed at random moments
    c.stop("slurmctld")
    time.sleep(15)
    c.start()
    rng = random.Random(11)
    for _ in range(3):
        time.sleep(rng.uniform(3, 15))
        if proc.poll() is not None:
            break
        proc.kill()
        proc.wait()
        proc = _provision(c, state, policy, links=3)
    assert proc.wait(timeout=400) == 0, (tmp_path / "chain.out").read_text()[-3000:]

    jobs = _chain_jobs(c, state)
    assert sorted(jobs) == [1, 2, 3] and all(len(ids) == 1 for ids in jobs.values()), jobs
    handovers = _handovers(state)
    assert [h["link"] for h in handovers] == [2, 3]
    for h in handovers:  # an idle cluster: the proactive successor starts at once
        assert h["reason"] == "policy" and h["interruption_s"] == 0, h
        assert 0 < h["overlap_s"] <= 40, h
        assert h["job_id"] == jobs[h["link"]][0]
    summary = json.loads((state / "summary.json").read_text())
    assert summary["handovers"] == 2 and summary["zero_interruption_share"] == 1.0
    status = subprocess.run([sys.executable, "-m", "mirage", "provision", "status", "--state-dir", str(state)],
                            env=c.env, capture_output=True, text=True)
    assert status.returncode == 0 and "(done)" in status.stdout and "handover 2->3" in status.stdout


class Background:
    """Another user's stream of short 1-CPU jobs that keeps every CPU busy and a queue waiting."""

    def __init__(self, c, queued: int = 12, seed: int = 3):
        self.c, self.queued, self.rng = c, queued, random.Random(seed)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            pending = [r for r in self.c.squeue("%i|%u|%T") if r[1] == self.c.user2 and r[2] == "PENDING"]
            for _ in range(self.queued - len(pending)):
                self.c.run("sbatch", f"--uid={self.c.user2}", "-A", self.c.account, "-p", self.c.partition,
                           "-t", "1", "--output=/dev/null", "-J", "background",
                           "--wrap", f"sleep {self.rng.randint(5, 10)}")
            self.stop.wait(1)

    def __enter__(self):
        self.thread.start()
        end = time.monotonic() + 60
        while self.c.run("sinfo", "-h", "-o", "%C").stdout.split("/")[1] != "0":  # no CPU idle
            assert time.monotonic() < end, "the background stream did not fill the node"
            time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        ids = [r[0] for r in self.c.squeue("%i|%u|%T") if r[1] == self.c.user2]
        if ids:
            self.c.run("scancel", *ids, check=False)


def test_busy_cluster_reactive_waits_where_plan_lead_does_not(slurm_cluster, tiny_run, tmp_path):
    c = slurm_cluster
    c.wait_idle()
    fitted = tiny_run / "results" / "tiny" / "ls6" / "calibrated" / "models" / "n1" / "quantile"
    for name in ("reactive", "plan", "fitted"):
        (tmp_path / name).mkdir()
    with Background(c):
        chains = {
            "reactive": _provision(c, tmp_path / "reactive", ["--policy", "reactive"], links=2),
            "plan": _provision(c, tmp_path / "plan", ["--policy", "plan_lead", "--policy-param", "lead_h=0.6"],
                               links=2),
            # any policy directory the workflow wrote runs live (its leads are for 48 h links)
            "fitted": _provision(c, tmp_path / "fitted", ["--policy", str(fitted)], links=2),
        }
        for name, proc in chains.items():
            assert proc.wait(timeout=400) == 0, (tmp_path / f"{name}.out").read_text()[-3000:]
    (reactive,) = _handovers(tmp_path / "reactive")
    (plan,) = _handovers(tmp_path / "plan")
    # the reactive successor queues behind the other user's older jobs; the plan-vetoed lead
    # submitted early enough to be first in line when a CPU freed
    assert reactive["reason"] == "reactive" and reactive["interruption_s"] > 0, reactive
    assert plan["reason"] == "policy" and plan["interruption_s"] == 0, plan
    (fitted_handover,) = _handovers(tmp_path / "fitted")
    assert fitted_handover["policy"] == str(fitted)
    for name in ("reactive", "plan", "fitted"):
        assert all(len(ids) == 1 for ids in _chain_jobs(c, tmp_path / name).values())
    assert os.path.exists(tmp_path / "plan" / "summary.json")


def test_a_cancelled_link_stops_the_chain_or_not_as_asked(slurm_cluster, tmp_path):
    c = slurm_cluster
    chains = {}
    for mode in ("stop", "continue"):
        (tmp_path / mode).mkdir()
        chains[mode] = _provision(c, tmp_path / mode, ["--policy", "reactive", "--on-failure", mode], links=2)
    # cancel each chain's first link once it runs
    first = {}
    end = time.monotonic() + 120
    while len(first) < 2:
        assert time.monotonic() < end, "the first links did not start"
        for mode in chains:
            st = tmp_path / mode / "state.json"
            if mode not in first and st.exists():
                links = json.loads(st.read_text())["links"]
                if links and links[0]["state"] == "RUNNING":
                    first[mode] = links[0]["job_id"]
                    c.run("scancel", first[mode])
        time.sleep(0.5)
    assert chains["stop"].wait(timeout=120) == 2
    stopped = json.loads((tmp_path / "stop" / "state.json").read_text())
    assert stopped["stopped"] == "link 1 ended CANCELLED" and len(stopped["links"]) == 1
    assert "ended CANCELLED; on failure: stop" in (tmp_path / "stop" / "provision.log").read_text()
    assert chains["continue"].wait(timeout=200) == 0, (tmp_path / "continue.out").read_text()[-3000:]
    (handover,) = _handovers(tmp_path / "continue")
    assert handover["predecessor_state"] == "CANCELLED" and handover["reason"] == "reactive"
    # stop asks a running provisioner to end; it cancels only the chain's own jobs
    (tmp_path / "later").mkdir()
    proc = _provision(c, tmp_path / "later", ["--policy", "reactive"], links=2)
    other = c.sbatch("--output=/dev/null", "-t", "2", "--wrap", "sleep 60")
    end = time.monotonic() + 60
    while not (tmp_path / "later" / "state.json").exists() or not json.loads(
            (tmp_path / "later" / "state.json").read_text())["links"]:
        assert time.monotonic() < end
        time.sleep(0.5)
    res = subprocess.run([sys.executable, "-m", "mirage", "provision", "stop", "--state-dir", str(tmp_path / "later"),
                          "--cancel"], env=c.env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert proc.wait(timeout=60) == 2
    mine = json.loads((tmp_path / "later" / "state.json").read_text())["links"][0]["job_id"]
    states = {j: r["State"] for j, r in c.sacct_jobs([mine, other]).items()}
    assert states[mine].startswith("CANCELLED") and states[str(other)] in ("RUNNING", "PENDING", "COMPLETED")
    c.run("scancel", str(other))
