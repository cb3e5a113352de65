"""The workflow through profiles/slurm on the live test cluster: every rule job a Slurm job with
the profile's resources, the same results as a local run, and the faults a cluster brings (a
job cancelled under it, Snakemake itself killed)."""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml
from paths import REPO
from runs import SNAKEMAKE, TINY, snakemake

RUN_ID = re.compile(r"SLURM run ID: (\S+)")


def _start(cluster, workdir: Path, profile: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "snakemake.out"
    proc = subprocess.Popen([*SNAKEMAKE, *args, "-s", str(REPO / "Snakefile"), "-d", str(workdir),
                             "--workflow-profile", str(profile), "--configfile", str(TINY)],
                            cwd=REPO, env=cluster.env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    return proc, log


def _run_id(log: Path) -> str:
    found = RUN_ID.findall(log.read_text())
    assert found, f"no 'SLURM run ID' in {log}"
    return found[-1]


def _jobs(cluster, run_id: str) -> list[dict[str, str]]:
    return cluster.sacct("--name", run_id, "-S", "now-1day",
                         fields="JobID,JobName,State,Comment,AllocCPUS,ReqMem,TimelimitRaw,Partition,Account,WorkDir")


def _rule(comment: str) -> str:
    return re.match(r"rule_(.+?)(_wildcards_.*)?$", comment).group(1)


def _dag_jobs(workdir: Path, *args: str) -> collections.Counter:
    """Jobs per rule of the DAG that is still to run, from Snakemake's own dry run."""
    res = snakemake(*args, "-n", "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--configfile", str(TINY))
    assert res.returncode == 0, res.stdout + res.stderr
    table = res.stdout.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    counts = collections.Counter()
    for line in table.splitlines()[3:]:  # after "job count" and the dashes
        rule, n = line.split()
        if rule != "total":
            counts[rule] = int(n)
    return counts


def test_tiny_config_through_slurm_equals_local_run(slurm_cluster, tiny_run, tmp_path):
    c = slurm_cluster
    work = tmp_path / "work"
    work.mkdir()
    # the tables and the report: the figures, notebooks and claims that follow are no different
    # on Slurm (each one more job of the same kind) and run in the local tests
    targets = ("evaluation", "report")
    expected = _dag_jobs(work, *targets)
    profile = c.profile(tmp_path / "profile")
    # every rule here runs on one thread; one with two shows that a rule's threads become the
    # job's CPUs (the samples do not depend on it)
    cfg = yaml.safe_load((profile / "config.yaml").read_text())
    cfg["set-threads"] = {"sample_shard": 2}
    (profile / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc, log = _start(c, work, profile, *targets)
    # a fault: the first sample_shard job that runs is cancelled under Snakemake's feet
    cancelled = None
    while proc.poll() is None:
        if cancelled is None:
            for job_id, name, state, comment in c.squeue():
                if comment.startswith("rule_sample_shard") and state == "RUNNING" and name.startswith("mirage_"):
                    c.run("scancel", job_id)
                    cancelled = (job_id, comment)
                    break
        time.sleep(0.3)
    assert proc.returncode == 0, log.read_text()[-4000:]
    assert cancelled, "no sample_shard job was seen running"

    # every rule job of the DAG ran as a Slurm job of this run, and only those; the cancelled
    # shard once more (the profile's retry)
    run_id = _run_id(log)
    jobs = _jobs(c, run_id)
    per_rule = collections.Counter(_rule(j["Comment"]) for j in jobs)
    expected_slurm = {rule: n for rule, n in expected.items() if rule not in ("all", "evaluation")}
    assert per_rule == {**expected_slurm, "sample_shard": expected_slurm["sample_shard"] + 1}
    states = collections.Counter(j["State"].split()[0] for j in jobs)
    assert states == {"COMPLETED": len(jobs) - 1, "CANCELLED": 1}, states
    (gone,) = [j for j in jobs if j["State"].startswith("CANCELLED")]
    assert (gone["JobID"], gone["Comment"]) == cancelled
    assert [j["State"].split()[0] for j in jobs if j["Comment"] == cancelled[1]] == ["CANCELLED", "COMPLETED"]

    # each job asked for what the profile and the rule say: CPUs = the rule's threads
    profile_cfg = yaml.safe_load((profile / "config.yaml").read_text())
    for job in jobs:
        rule = _rule(job["Comment"])
        res = {**profile_cfg["default-resources"], **profile_cfg["set-resources"].get(rule, {})}
        assert job["Partition"] == c.partition and job["Account"] == c.account
        # the workflow's directory is the job's: what the controller-down test looks for
        assert job["WorkDir"] == str(work), job
        assert int(job["TimelimitRaw"]) == res["runtime"], job
        assert job["ReqMem"] == f"{res['mem_mb']}M", job
        # the history models' fits run HISTORY_THREADS (2) threads
        two = {"sample_shard", "fit_history", "fit_history_seed"}
        assert int(job["AllocCPUS"]) == (2 if rule in two else 1), job

    # the same results as the local run, to the byte; the committed reference figures hold
    for name in ("ls6/evaluation.csv", "ls6/trace/clean_report.json", "ls6/calibrated/samples/summary.json"):
        assert (work / "results" / "tiny" / name).read_bytes() == (tiny_run / "results" / "tiny" / name).read_bytes(), name
    pd.testing.assert_frame_equal(pd.read_parquet(work / "results/tiny/ls6/outcomes.parquet"),
                                  pd.read_parquet(tiny_run / "results/tiny/ls6/outcomes.parquet"))
    check = subprocess.run([sys.executable, "-m", "mirage", "expected", "check",
                            str(work / "results" / "tiny" / "ls6" / "evaluation.csv"),
                            "--expected", str(REPO / "results" / "expected" / "tiny.csv")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert (work / "results" / "tiny" / "report.md").exists()


def test_killed_snakemake_resumes_without_redoing_finished_shards_and_outlives_slurmctld(slurm_cluster, tmp_path):
    c = slurm_cluster
    work = tmp_path / "work"
    profile = c.profile(tmp_path / "profile")
    # one job at a time, so that the kill falls between one finished shard and the next
    proc, log = _start(c, work, profile, "samples", "--jobs", "1")
    shards = work / "results" / "tiny" / "ls6" / "calibrated" / "samples" / "shards"
    deadline = time.monotonic() + 600
    while True:
        assert proc.poll() is None, "Snakemake ended before it could be killed:\n" + log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        finished = log.read_text().count("(Rule: sample_shard)")
        running = [row for row in c.squeue() if row[3].startswith("rule_sample_shard") and row[2] == "RUNNING"]
        if finished >= 1 and running:
            break
        time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first_run = _run_id(log)
    (running_shard,) = {row[3].rsplit("_", 1)[1] for row in running}
    (finished_shard,) = {p.name for p in shards.iterdir()} - {running_shard}
    kept = [shards / finished_shard, *(shards / finished_shard).rglob("*")]
    before = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in kept}
    # the killed run's job goes on running on the cluster; a user cancels it by the run's job name
    c.run("scancel", "--name", first_run)
    c.wait_idle()

    # the documented way back: unlock, then the same command; only the unfinished shard is redone
    unlock = snakemake("--unlock", "-s", str(REPO / "Snakefile"), "-d", str(work), "--configfile", str(TINY))
    assert unlock.returncode == 0, unlock.stdout + unlock.stderr
    remaining = _dag_jobs(work, "samples")
    assert remaining == {"sample_shard": 1, "gather_samples": 1, "samples": 1}, remaining
    proc, log = _start(c, work, profile, "samples")
    # and a controller outage while the shard runs: the run rides it out
    deadline = time.monotonic() + 300
    while not any(row[2] == "RUNNING" for row in c.squeue()):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.3)
    c.stop("slurmctld")
    time.sleep(20)
    c.start()
    assert proc.wait(timeout=900) == 0, log.read_text()[-4000:]
    assert {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in kept} == before
    jobs = _jobs(c, _run_id(log))
    # only the unfinished shard and the gather ran; a job whose step started during the outage
    # fails (srun cannot confirm its allocation) and the profile's retry runs it again
    shard = f"rule_sample_shard_wildcards_ls6_calibrated_{running_shard}"
    gather = "rule_gather_samples_wildcards_ls6_calibrated"
    by_comment = collections.defaultdict(list)
    for j in jobs:
        by_comment[j["Comment"]].append(j["State"].split()[0])
    assert set(by_comment) == {shard, gather}, by_comment
    for states in by_comment.values():
        assert states in (["COMPLETED"], ["FAILED", "COMPLETED"]), by_comment
    summary = work / "results" / "tiny" / "ls6" / "calibrated" / "samples" / "summary.json"
    assert summary.exists()
