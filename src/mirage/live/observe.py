"""The live producer of mirage.features.view.ClusterView: what squeue, sinfo, sacct and
``sbatch --test-only`` say, read in their parsable forms.

Times are Slurm's naive local wall-clock times, counted in seconds as the traces are (a naive
timestamp read as UTC), so hour-of-day features mean the same as in training. Sizes are nodes,
or CPUs for a cluster whose "nodes" are the CPUs of one machine (``unit="cpus"``, the test
cluster). ``time_scale`` stretches every duration (elapsed, waits, limits) by one factor around
an origin, so a time-compressed chain of minutes meets a policy trained on hours.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd

from mirage.features.queue import QueueView
from mirage.features.view import ClusterView
from mirage.live.slurm import Slurm, SlurmError
from mirage.sim.jobs import to_seconds
from mirage.traces.fields import parse_limit_minutes
from mirage.units import DAY_S

STARTED_KEPT = 300  # as the samples: the last 100 starts and a day's worth
_TEST_ONLY = re.compile(r"to start at (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})")
_SQUEUE = ("id", "state", "submit", "start", "nodes", "cpus", "limit", "priority", "reason", "user",
           "dependency")
_SQUEUE_FORMAT = "|".join(("%i", "%T", "%V", "%S", "%D", "%C", "%l", "%Q", "%r", "%u", "%E"))
#: pending jobs not in the queue yet: held, or waiting for their --begin time (the simulator
#: enters them at their eligible time)
_NOT_YET_QUEUED = ("BeginTime", "JobHeldUser", "JobHeldAdmin")
#: the job an unfulfilled dependency waits on, in squeue's %E (``afterok:123(unfulfilled)``)
_WAITS_ON = re.compile(r"after\w*:(\d+)[^,()]*\(unfulfilled\)")


def epoch(text: str | None) -> int | None:
    """Slurm's ``2026-12-01T22:10:11`` as seconds (naive, as the traces count); None for
    ``Unknown``/``N/A``/empty."""
    if not text or not text[0].isdigit():
        return None
    return to_seconds(text)


def now_s() -> int:
    return int(pd.Timestamp(datetime.now().replace(microsecond=0)).value // 10**9)


def limit_s(text: str) -> int:
    minutes, bad = parse_limit_minutes(pd.Series([text]))
    if bad.iloc[0]:
        raise SlurmError(f"cannot read the time limit {text!r} Slurm printed")
    value = minutes.iloc[0]
    return 365 * DAY_S if pd.isna(value) else int(value) * 60


@dataclass
class LiveObserver:
    """Builds ClusterViews of one partition for a chain of ``chain_nodes`` x ``limit_min``."""

    slurm: Slurm
    chain_nodes: int
    limit_min: int
    partition: str | None = None
    account: str | None = None
    unit: str = "nodes"
    time_scale: float = 1.0
    origin: int = 0
    #: sacct's -S for the started jobs (the features look at the last day)
    history_since: str = "now-1days"

    def scaled(self, t: float) -> float:
        return self.origin + (t - self.origin) * self.time_scale

    def _where(self) -> list[str]:
        return [f"--partition={self.partition}"] if self.partition else []

    def jobs(self) -> list[dict[str, str]]:
        """squeue's pending, running and completing jobs of the partition (``_SQUEUE``'s fields:
        the view reads sizes, times, priority and reason; the queue view users and dependencies)."""
        return self.slurm.table("squeue", "-h", "-a", "-t", "PD,R,CG", *self._where(), "-o", _SQUEUE_FORMAT,
                                fields=_SQUEUE)

    def capacity(self) -> int:
        rows = self.slurm.table("sinfo", "-h", "-N", *self._where(), "-o", "%N|%t|%c",
                                fields=("node", "state", "cpus"))
        usable = [r for r in rows if r["state"].rstrip("*~#$@").lower() in
                  ("idle", "mix", "alloc", "comp", "mixed", "allocated", "completing")]
        return sum(int(r["cpus"]) for r in usable) if self.unit == "cpus" else len({r["node"] for r in usable})

    def started(self, now: int) -> np.ndarray:
        """Jobs started in the last day (sacct); empty where there is no accounting."""
        try:
            rows = self.slurm.table("sacct", "-a", "-X", "-n", "--parsable2", "-S", self.history_since,
                                    "-E", "now", *self._where(), "-o", "JobID,Submit,Start,NNodes,AllocCPUS,TimelimitRaw",
                                    fields=("id", "submit", "start", "nodes", "cpus", "limit"), retry=False)
        except SlurmError:
            return np.zeros((0, 4))
        out = []
        for r in rows:
            submit, start = epoch(r["submit"]), epoch(r["start"])
            if submit is None or start is None or start > now or not r["limit"].isdigit():
                continue
            size = int(r["cpus"] if self.unit == "cpus" else r["nodes"])
            out.append((start, submit, r["id"], (submit, start, size, int(r["limit"]) * 60)))
        # by start, ties as a job table orders them (submit, then the id as text), as the
        # simulator's producer reads its trace
        out.sort(key=lambda row: row[:3])
        return np.asarray([row[3] for row in out[-STARTED_KEPT:]], dtype=np.float64).reshape(-1, 4)

    def plan(self) -> int | None:
        """``sbatch --test-only``: when Slurm would start the successor submitted now."""
        size = ["-n", str(self.chain_nodes)] if self.unit == "cpus" else ["-N", str(self.chain_nodes)]
        account = [f"--account={self.account}"] if self.account else []
        out = self.slurm.run("sbatch", "--test-only", *size, "-t", str(self.limit_min), *self._where(), *account,
                             "--wrap", "true", with_stderr=True)
        found = _TEST_ONLY.search(out)
        return epoch(found.group(1)) if found else None

    def view(self, pred_submit: int, pred_start: int | None, now: int | None = None) -> ClusterView:
        """The cluster at ``now`` as the policy sees it. The predecessor is one of the running
        jobs here as in the samples' simulations, and is described by ``pred_*`` besides."""
        now = now_s() if now is None else now
        pending, running = [], []
        for j in self.jobs():
            size = int(j["cpus"] if self.unit == "cpus" else j["nodes"])
            submit, lim = epoch(j["submit"]), limit_s(j["limit"])
            if j["state"] == "PENDING":
                if j["reason"] == "Dependency" or j["reason"] in _NOT_YET_QUEUED:
                    continue  # not eligible: neither queued ahead nor holding a reservation
                pending.append((int(j["priority"]), submit, size, lim))
            else:
                running.append((submit, epoch(j["start"]) or now, size, lim))
        pending.sort(key=lambda r: -r[0])  # Slurm's order: highest priority first
        pend = np.asarray([r[1:] for r in pending], dtype=np.float64).reshape(-1, 3)
        run = np.asarray(running, dtype=np.float64).reshape(-1, 4)
        started = self.started(now)
        plan = self.plan()
        s = self.time_scale
        if s != 1.0:
            pend[:, 0] = self.scaled(pend[:, 0])
            pend[:, 2] *= s
            run[:, 0], run[:, 1], run[:, 3] = self.scaled(run[:, 0]), self.scaled(run[:, 1]), run[:, 3] * s
            started[:, 0], started[:, 1], started[:, 3] = (self.scaled(started[:, 0]), self.scaled(started[:, 1]),
                                                           started[:, 3] * s)
        ahead = float((pend[:, 1] * pend[:, 2]).sum())  # eligible work queued: a new job ranks last
        t = int(self.scaled(now))
        return ClusterView(
            now=t, capacity=self.capacity(), pending=pend, running=run, started=started,
            chain_nodes=self.chain_nodes,
            pred=(int(self.scaled(pred_submit)), -1 if pred_start is None else int(self.scaled(pred_start)),
                  int(self.limit_min * 60 * s)),
            plan_start=None if plan is None else int(self.scaled(plan)), plan_ahead_node_s=ahead)

    def queue_view(self, pred_id: str, pred_submit: int, pred_start: int | None,
                   now: int | None = None) -> QueueView:
        """The observable queue at ``now`` as mirage.features.queue.QueueView (what the twin
        policy decides from): running jobs (size, limit, start, user, id), the eligible pending
        ones in Slurm's priority order (queue entry, size, limit, current priority, user, id,
        and the queued or running job an unfulfilled dependency waits on), the capacity. The
        predecessor (job ``pred_id``) is described by the ``pred_*`` fields only, its priority
        as squeue shows it: the current one while it pends, the one it started with once it
        runs (Slurm recalculates only pending jobs' priorities); a held job or one waiting for
        its ``--begin`` time is not in the queue yet, as in the simulator."""
        now = now_s() if now is None else now
        run, pend = [], []
        pred_priority = float("nan")
        for j in self.jobs():
            if j["id"] == str(pred_id):
                if (j["priority"] or "").isdigit() and int(j["priority"]) > 0:
                    pred_priority = float(j["priority"])
                continue
            size = int(j["cpus"] if self.unit == "cpus" else j["nodes"])
            submit, lim = epoch(j["submit"]), limit_s(j["limit"])
            if j["state"] == "PENDING":
                if j["reason"] in _NOT_YET_QUEUED:
                    continue
                found = _WAITS_ON.search(j["dependency"] or "")
                dep = int(found.group(1)) if found and j["reason"] == "Dependency" else -1
                pend.append((-int(j["priority"]), submit, size, lim, j["user"], int(j["id"]), dep))
            else:
                run.append((epoch(j["start"]) or now, size, lim, j["user"], int(j["id"])))
        pend.sort(key=lambda r: (r[0], r[1], r[5]))  # highest priority first, then submit order
        ids = {r[4] for r in run} | {r[5] for r in pend}
        s = self.time_scale
        return QueueView(
            now=int(self.scaled(now)), capacity=self.capacity(),
            running_nodes=[r[1] for r in run], running_limit_s=[int(r[2] * s) for r in run],
            running_start=[int(self.scaled(r[0])) for r in run], running_user=[r[3] for r in run],
            running_id=[r[4] for r in run],
            pending_submit=[int(self.scaled(r[1])) for r in pend], pending_nodes=[r[2] for r in pend],
            pending_limit_s=[int(r[3] * s) for r in pend], pending_priority=[-r[0] for r in pend],
            pending_user=[r[4] for r in pend], pending_id=[r[5] for r in pend],
            pending_dep=[r[6] if r[6] in ids else -1 for r in pend],
            pred_submit=int(self.scaled(pred_submit)),
            pred_start=-1 if pred_start is None else int(self.scaled(pred_start)),
            pred_limit_s=int(self.limit_min * 60 * s), chain_nodes=self.chain_nodes,
            pred_priority=pred_priority)
