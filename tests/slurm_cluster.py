"""The live Slurm test cluster (tests/slurm/cluster.sh) as a session fixture (a plain module
like paths.py; tests/conftest.py registers the fixture and the marker).

Every test of a module named ``test_*_on_slurm.py`` (they live with the stage they test: tests/live,
tests/traces, tests/workflow) carries the `slurm` marker. Where the cluster cannot come up (not root, no
package manager, the daemons fail) the tests skip with the reason, except under CI=true, where
that is a failure: CI proves the Slurm side, it never skips it."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from paths import REPO

CLUSTER_SH = REPO / "tests" / "slurm" / "cluster.sh"
OVERLAY = REPO / "tests" / "slurm" / "overlay.yaml"
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
#: the status-check pacing the overlay may set for the test cluster's jobs of seconds
PACING = {"slurm-init-seconds-before-status-checks", "max-status-checks-per-second"}


#: a test module whose file name ends so runs on the live test cluster
SLURM_SUFFIX = "_on_slurm.py"


def on_slurm(path: str | Path) -> bool:
    return Path(path).name.endswith(SLURM_SUFFIX)


def mark_slurm_tests(items) -> None:
    for item in items:
        if on_slurm(item.fspath):
            item.add_marker(pytest.mark.slurm)


def xdist_scheduler(config, log):
    """pytest-xdist's scheduler for this suite: a module's tests on one worker (its fixtures
    built once), and every test of the one live cluster on one worker, in order (they stop and
    start its daemons and count its jobs). The cluster's tests wait on Slurm most of their
    time; the other worker runs the rest meanwhile. (``--dist loadgroup`` would say the same
    with markers, but pytest-xdist 3.8 cannot rename pytest 9's node ids to carry the group.)"""
    from xdist.scheduler import LoadScopeScheduling

    cluster = "live slurm cluster"

    class ModulesWithTheClusterOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return cluster if on_slurm(path) else path

        def _assign_work_unit(self, node) -> None:
            # the cluster's tests first: the longest unit, and mostly waiting
            if cluster in self.workqueue:
                self.workqueue.move_to_end(cluster, last=False)
            super()._assign_work_unit(node)

    return ModulesWithTheClusterOnOneWorker(config, log)


class Cluster:
    """A client's view of the running test cluster: its environment and Slurm's commands."""

    def __init__(self, env: dict[str, str]):
        self.env = {**os.environ, **env}
        self.partition = env["MIRAGE_SLURM_PARTITION"]
        self.account = env["MIRAGE_SLURM_ACCOUNT"]
        self.user2 = env["MIRAGE_SLURM_USER2"]

    def run(self, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
        res = subprocess.run(list(args), env=self.env, capture_output=True, text=True, **kw)
        if check and res.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({res.returncode}): {res.stderr.strip()}")
        return res

    def sbatch(self, *args: str) -> int:
        out = self.run("sbatch", "--parsable", "-A", self.account, "-p", self.partition, *args).stdout
        return int(out.strip().split(";")[0])

    def sacct(self, *args: str, fields: str = "JobID,JobName,State,Comment") -> list[dict[str, str]]:
        out = self.run("sacct", "-a", "-X", "--parsable2", "-o", fields, *args).stdout.splitlines()
        header = out[0].split("|")
        return [dict(zip(header, line.split("|"))) for line in out[1:] if line]

    def sacct_jobs(self, ids, fields: str = "JobID,JobName,State,Comment", timeout: float = 60,
                   started: bool = False) -> dict[str, dict[str, str]]:
        """sacct's rows of ``ids`` by job id, once slurmdbd has recorded every one of them (and,
        with ``started``, their start: ``fields`` must then hold Start).

        slurmctld hands its records to slurmdbd asynchronously, so a job that squeue already shows
        may be missing from sacct, or its start, for a moment (a loaded CI machine saw it)."""
        want = {str(i) for i in ids}
        end = time.monotonic() + timeout
        while True:
            rows = {r["JobID"]: r for r in self.sacct("-j", ",".join(sorted(want)), fields=fields)}
            if want <= rows.keys() and not (started and any(rows[j]["Start"] in ("Unknown", "None") for j in want)):
                return rows
            assert time.monotonic() < end, f"sacct never listed jobs {sorted(want - rows.keys())}"
            time.sleep(0.5)

    def squeue(self, fmt: str = "%i|%j|%T|%k") -> list[list[str]]:
        out = self.run("squeue", "-h", "-o", fmt).stdout.splitlines()
        return [line.split("|") for line in out if line]

    def wait_state(self, ids, state: str, timeout: float = 60) -> None:
        """Until every job of ``ids`` is in ``state`` (RUNNING, PENDING) as squeue shows it."""
        end = time.monotonic() + timeout
        while True:
            states = {r[0]: r[2] for r in self.squeue()}
            if all(states.get(str(i)) == state for i in ids):
                return
            assert time.monotonic() < end, (ids, state, states)
            time.sleep(0.5)

    def wait_idle(self, timeout: float = 120) -> None:
        end = time.monotonic() + timeout
        while self.squeue():
            if time.monotonic() > end:
                raise AssertionError(f"jobs still queued after {timeout} s: {self.squeue()}")
            time.sleep(1)

    def stop(self, daemon: str) -> None:
        """An outage: stop one daemon (slurmctld, slurmd, slurmdbd); `start` ends it."""
        subprocess.run(["bash", str(CLUSTER_SH), "stop", daemon], check=True, capture_output=True)

    def start(self) -> None:
        res = subprocess.run(["bash", str(CLUSTER_SH), "up"], capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr

    def profile(self, dest: Path) -> Path:
        """A copy of profiles/slurm with tests/slurm/overlay.yaml merged in: the test cluster's
        partition and account and the pacing of status checks, nothing else."""
        profile = yaml.safe_load(PROFILE.read_text())
        overlay = yaml.safe_load(OVERLAY.read_text())
        profile["default-resources"].update(overlay.pop("default-resources"))
        assert set(overlay) <= PACING <= set(profile), "the overlay changes the pacing only"
        profile.update(overlay)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
        return dest


def _unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"the live Slurm cluster must come up under CI=true: {reason}", pytrace=False)
    pytest.skip(f"live Slurm cluster unavailable: {reason}")


@pytest.fixture(scope="session")
def slurm_cluster() -> Cluster:
    if os.geteuid() != 0:
        _unavailable("not root (tests/slurm/cluster.sh starts the daemons as root)")
    if not shutil.which("apt-get") and not shutil.which("slurmctld"):
        _unavailable("Slurm is not installed and there is no apt-get to install it")
    status = subprocess.run(["bash", str(CLUSTER_SH), "status"], capture_output=True, text=True)
    was_up = "slurmctld running" in status.stdout
    up = subprocess.run(["bash", str(CLUSTER_SH), "up"], capture_output=True, text=True, timeout=900)
    if up.returncode != 0:
        _unavailable(f"tests/slurm/cluster.sh up failed:\n{up.stderr[-3000:]}")
    env = {}
    for line in up.stdout.splitlines():
        for item in line.removeprefix("export ").split():
            key, _, value = item.partition("=")
            env[key] = value
    cluster = Cluster(env)
    yield cluster
    if was_up:  # someone else's cluster session: leave it up, without our jobs
        jobs = [row[0] for row in cluster.squeue()]
        if jobs:
            cluster.run("scancel", *jobs, check=False)
    else:  # ours: every daemon it started goes, as on a fresh CI machine
        down = subprocess.run(["bash", str(CLUSTER_SH), "down"], capture_output=True, text=True, timeout=300)
        assert down.returncode == 0, f"tests/slurm/cluster.sh down failed:\n{down.stderr}"
        status = subprocess.run(["bash", str(CLUSTER_SH), "status"], capture_output=True, text=True).stdout
        assert " running" not in status, status
