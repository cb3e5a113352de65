"""mirage.live.slurm against the live cluster: checks that pass on a working cluster, a clear
error and nothing submitted while the controller is down, retries that ride out a restart."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from paths import REPO
from runs import SNAKEMAKE, TINY

from mirage.live.slurm import Slurm, SlurmError, check_cluster


def test_check_passes_on_the_live_cluster(slurm_cluster):
    c = slurm_cluster
    checks = check_cluster(Slurm(env=c.env), partition=c.partition, account=c.account)
    assert all(ch.ok for ch in checks), checks
    assert {ch.name for ch in checks} >= {"client commands", "controller", "accounting",
                                          f"partition {c.partition}", f"account {c.account}"}
    res = subprocess.run([sys.executable, "-m", "mirage", "slurm", "check", "--partition", "nowhere"],
                         env=c.env, capture_output=True, text=True)
    assert res.returncode == 2 and "FAIL partition nowhere: not one of gpu" in res.stdout


def test_controller_down_stops_the_workflow_before_it_submits(slurm_cluster, tmp_path):
    c = slurm_cluster
    c.stop("slurmctld")
    try:
        res = subprocess.run([sys.executable, "-m", "mirage", "slurm", "check"], env=c.env,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 2
        assert "FAIL controller" in res.stdout and "Fix:" in res.stdout
        profile = c.profile(tmp_path / "profile")
        start = time.monotonic()
        run = subprocess.run([*SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(tmp_path / "w"),
                              "--workflow-profile", str(profile), "--configfile", str(TINY)],
                             env=c.env, capture_output=True, text=True, timeout=300)
        text = run.stdout + run.stderr
        assert run.returncode != 0, text[-3000:]
        assert "cannot take jobs now, nothing was submitted" in text and "controller" in text, text[-3000:]
        assert "has been submitted with SLURM jobid" not in text
        assert time.monotonic() - start < 120
    finally:
        c.start()
    # slurmdbd records earlier tests' jobs late, so count only jobs run from this workflow's
    # directory (what sbatch from snakemake would have recorded as the job's WorkDir)
    workdir = str(tmp_path / "w")
    ours = [r for r in c.sacct("-S", "now-1day", fields="JobID,JobName,WorkDir")
            if r["WorkDir"].startswith(workdir)]
    assert ours == []


def test_commands_retry_through_a_controller_restart(slurm_cluster):
    c = slurm_cluster
    lines = []
    slurm = Slurm(env=c.env, retries=6, backoff=1, timeout=20, log=lines.append)
    c.stop("slurmctld")
    # squeue itself waits about 9 s for a controller before it gives up
    restart = threading.Timer(12, c.start)
    restart.start()
    try:
        out = slurm.run("squeue", "-h", "-o", "%i")
    finally:
        restart.join()
    assert out is not None and lines, "squeue answered while the controller was down"
    assert all("retry" in line and "squeue" in line for line in lines)
    # a final failure says so, with Slurm's own words and the fix
    c.stop("slurmctld")
    try:
        try:
            Slurm(env=c.env, retries=1, backoff=0.1, log=lines.append).run("squeue")
        except SlurmError as exc:
            assert "failed after 2 attempt(s)" in str(exc) and "scontrol ping" in str(exc)
        else:
            raise AssertionError("squeue succeeded with the controller down")
    finally:
        c.start()
