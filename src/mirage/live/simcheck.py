"""The simulator against a real slurmctld: one seeded workload, run on a live Slurm cluster and
replayed in :mod:`mirage.sim`, compared job by job.

1. :func:`describe_cluster` derives the cluster description from the running cluster
   (``scontrol show config``: priority weights and ``SchedulerParameters``; ``sinfo``: CPUs;
   ``sacctmgr show qos``: the per-user limits of the QOS the jobs run under), every value with a
   source note saying what was read, and why where Slurm's meaning had to be translated.
2. :func:`make_workload` draws a time-compressed workload (seeded): limits of 1..15 minutes,
   runtimes below them, sizes in CPUs of the one node (the simulator's "nodes"), two users,
   holds released later, ``--begin`` times, ``afterany`` dependencies, nice values (a fixed
   priority part), a burst that keeps the queue long, and leave-one-out probes.
3. :func:`run_workload` submits it on the live cluster (as root; the second user through
   ``sbatch --uid``), releases the holds on time, waits for every job and dumps
   ``sacct --parsable2`` with ``Eligible``.
4. :func:`compare` replays the dump in the simulator (a warm start at the first submit, which is
   an empty cluster) and, for every probe, leaves it out, warm-starts from the recorded state at
   its submit and inserts it (a what-if); per job: real vs simulated start.

``mirage bench slurm-sim`` (:mod:`mirage.bench.slurm_sim`) runs the four steps and draws the
figure; ``tests/live/test_simcheck_on_slurm.py`` runs a small version.
"""

from __future__ import annotations

import datetime
import json
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mirage.errors import MirageError
from mirage.live.slurm import Slurm, SlurmError
from mirage.sim.cluster import ClusterDescription, load_cluster
from mirage.sim.engine import INF
from mirage.sim.jobs import JobTable
from mirage.sim.warmstart import warm_start
from mirage.units import DAY_S

#: the QOS the benchmark creates for its jobs (removed again at the end) unless told to use one
QOS = "mirage-simcheck"
SACCT_FIELDS = ("JobID,JobIDRaw,JobName,User,Submit,Eligible,Start,End,TimelimitRaw,NNodes,AllocCPUS,"
                "ReqCPUS,Priority,QOS,State,ExitCode")
TERMINAL = ("COMPLETED", "TIMEOUT", "FAILED", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
            "DEADLINE", "BOOT_FAIL")


#: the "last minute" comparison starts this long before each job's real start
STEP_S = 60


class SimCheckError(MirageError):
    """The comparison cannot run: the cluster, the workload or its records are not usable."""


# --------------------------------------------------------------------------- the workload
@dataclass(frozen=True)
class WorkJob:
    key: int  # position in the workload
    user: int  # 0: the submitting user, 1: the second user
    submit_s: float  # offset of the submission from the workload's start
    cpus: int
    limit_min: int
    run_s: int  # the job sleeps this long (below its limit)
    kind: str  # plain, held, begin, dep, probe
    hold_s: float | None = None  # held at submit, released at this offset
    begin_s: int | None = None  # --begin=now+begin_s
    dep: int | None = None  # key of the job it waits for (afterany)
    nice: int = 0


@dataclass(frozen=True)
class WorkloadSpec:
    """The workload's shape. The defaults are the documented benchmark (docs/sim.md)."""

    jobs: int = 200
    seed: int = 0
    #: submissions spread over this many seconds after the opening burst
    span_s: int = 1200
    #: share of the jobs submitted in the opening burst (keeps the queue long from the start)
    burst: float = 0.3
    max_limit_min: int = 15
    #: runtimes are drawn in [min_run_s, min(max_run_s, limit - 10 s)]
    min_run_s: int = 5
    max_run_s: int = 75
    #: holds are released, and --begin times fall, up to this many seconds after the submit
    delay_s: int = 180
    held: float = 0.08
    begin: float = 0.08
    dep: float = 0.08
    probes: float = 0.12
    nice: float = 0.1


def make_workload(spec: WorkloadSpec, cpus: int, max_cpus: int | None = None) -> list[WorkJob]:
    """The seeded workload: the same spec and CPU counts give the same jobs. ``max_cpus``: the
    largest job (a per-user CPU limit below the node's would hold a larger one for ever)."""
    if spec.jobs < 4:
        raise SimCheckError(f"a workload of {spec.jobs} jobs compares nothing. Fix: ask for at least 4 jobs")
    if spec.max_limit_min < 1 or spec.min_run_s < 1 or spec.max_run_s < spec.min_run_s:
        raise SimCheckError("the workload's limits and runtimes are empty. Fix: max_limit_min >= 1 and "
                            "1 <= min_run_s <= max_run_s")
    rng = np.random.default_rng(spec.seed)
    n = spec.jobs
    n_burst = int(round(spec.burst * n))
    offsets = np.sort(np.concatenate([rng.uniform(0, 5, n_burst),
                                      5 + rng.uniform(0, spec.span_s, n - n_burst)]))
    # sizes: mostly small, some half and whole node (backfill matters when big jobs wait)
    top = min(cpus, max_cpus or cpus)
    sizes = [1, 1, 1, 2, 2, 3, 4, 4, 6, 8, max(1, top * 3 // 4), top]
    out: list[WorkJob] = []
    kinds = rng.choice(["plain", "held", "begin", "dep", "probe"], size=n,
                       p=_kind_p(spec))
    for k in range(n):
        limit = int(rng.integers(1, spec.max_limit_min + 1))
        hi = max(spec.min_run_s, min(spec.max_run_s, limit * 60 - 10))
        run = int(rng.integers(spec.min_run_s, hi + 1))
        c = int(min(top, rng.choice(sizes)))
        user = int(rng.random() < 0.5)
        kind = str(kinds[k])
        nice = int(rng.choice([100, 300])) if (kind == "plain" and rng.random() < spec.nice) else 0
        hold = begin = dep = None
        if kind == "held":
            hold = float(offsets[k] + rng.uniform(spec.delay_s / 9, spec.delay_s * 2 / 3))
        elif kind == "begin":
            begin = int(rng.integers(max(1, spec.delay_s // 6), max(2, spec.delay_s)))
        elif kind == "dep":
            earlier = [j for j in out[-12:] if j.kind in ("plain", "dep")]
            if earlier:
                dep = earlier[int(rng.integers(len(earlier)))].key
            else:
                kind = "plain"
        elif kind == "probe":
            user = 0
        out.append(WorkJob(key=k, user=user, submit_s=float(offsets[k]), cpus=c, limit_min=limit,
                           run_s=run, kind=kind, hold_s=hold, begin_s=begin, dep=dep, nice=nice))
    return out


def _kind_p(spec: WorkloadSpec) -> list[float]:
    special = [spec.held, spec.begin, spec.dep, spec.probes]
    if min(special) < 0 or sum(special) >= 1:
        raise SimCheckError("the shares of held, begin, dep and probe jobs must be >= 0 and sum below 1. "
                            "Fix: lower them")
    return [1 - sum(special)] + special


# --------------------------------------------------------------------------- the live cluster
def _config(slurm: Slurm) -> dict[str, str]:
    out = {}
    for line in slurm.run("scontrol", "show", "config").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _duration_s(text: str) -> int:
    """Slurm's ``[D-]HH:MM:SS`` as seconds."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+):(\d+):(\d+)", text.strip())
    if not m:
        raise SimCheckError(f"Slurm printed the duration {text!r} in an unknown form. Fix: check the "
                            "Slurm version (22.05 or newer)")
    d, h, mi, s = (int(x or 0) for x in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def _sched_params(text: str) -> dict[str, str]:
    out = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key.strip():
            out[key.strip()] = value.strip()
    return out


def qos_limits(slurm: Slurm, qos: str) -> dict:
    rows = slurm.table("sacctmgr", "-n", "-P", "show", "qos", qos, "format=name,priority,maxjobspu,maxtrespu",
                       fields=("name", "priority", "maxjobspu", "maxtrespu"))
    rows = [r for r in rows if r["name"] == qos]
    if not rows:
        raise SimCheckError(f"QOS {qos!r} does not exist on this cluster. Fix: name an existing QOS "
                            "(sacctmgr show qos) or let the benchmark create its own")
    r = rows[0]
    cpu = re.search(r"cpu=(\d+)", r["maxtrespu"] or "")
    return {"priority": int(r["priority"] or 0),
            "max_jobs": int(r["maxjobspu"]) if r["maxjobspu"] else None,
            "max_cpus": int(cpu.group(1)) if cpu else None}


def describe_cluster(slurm: Slurm, partition: str, qos: str, out: Path) -> tuple[ClusterDescription, dict]:
    """The description the simulator reads, derived from the running cluster, written to
    ``out`` (YAML, every leaf with its source) and loaded back through ``load_cluster``."""
    import yaml

    cfg = _config(slurm)
    if cfg.get("PriorityType") != "priority/multifactor":
        raise SimCheckError(f"PriorityType is {cfg.get('PriorityType')!r}; the simulator models "
                            "priority/multifactor. Fix: run on a cluster with multifactor priority")
    if cfg.get("SchedulerType") != "sched/backfill":
        raise SimCheckError(f"SchedulerType is {cfg.get('SchedulerType')!r}. Fix: run on a cluster with "
                            "sched/backfill")
    nodes = slurm.table("sinfo", "-h", "-N", "-p", partition, "-o", "%N|%c", fields=("node", "cpus"))
    if not nodes:
        raise SimCheckError(f"partition {partition!r} has no nodes. Fix: name the partition to run on")
    cpus = sum(int(r["cpus"]) for r in {r["node"]: r for r in nodes}.values())
    n_nodes = len({r["node"] for r in nodes})
    sp = _sched_params(cfg.get("SchedulerParameters", ""))
    lim = qos_limits(slurm, qos)
    w_size = float(cfg.get("PriorityWeightJobSize", 0))
    when = time.strftime("%Y-%m-%dT%H:%M:%S")
    calc_period = _duration_s(cfg.get("PriorityCalcPeriod", "00:05:00"))
    try:
        boot = int(datetime.datetime.fromisoformat(cfg["BOOT_TIME"]).timestamp())
    except (KeyError, ValueError):
        raise SimCheckError(f"scontrol show config printed no readable BOOT_TIME ({cfg.get('BOOT_TIME')!r}). "
                            "Fix: check the Slurm version (22.05 or newer)") from None
    calc_phase = boot % calc_period if calc_period else 0
    conf = f"scontrol show config ({when})"
    size_note = (f"PriorityWeightJobSize={w_size:g} from {conf}, halved: Slurm 22.05's job size factor "
                 "(PriorityFavorSmall=NO, no SMALL_RELATIVE_TO_TIME) is the mean of the node share and "
                 "the CPU share; on this one-node partition the node share is the same for every job, so "
                 "only half the weight ranks jobs by their CPUs (sprio -l: 1 CPU 53, 8 CPUs 75, 16 CPUs "
                 "100 of 100). Found by this comparison.") if n_nodes == 1 else (
                 f"PriorityWeightJobSize={w_size:g} from {conf} (several nodes: the simulator's size "
                 "share is the CPU share; Slurm averages node and CPU shares)")
    doc = {
        "cluster": "live",
        "nodes": {"value": cpus, "source": f"sinfo -N -p {partition}: {cpus} CPUs on {n_nodes} node(s); "
                  "the test cluster schedules CPUs, so one CPU is one simulated node"},
        "priority": {
            "weight_age": {"value": float(cfg.get("PriorityWeightAge", 0)),
                           "source": f"PriorityWeightAge from {conf}"},
            "max_age_days": {"value": _duration_s(cfg.get("PriorityMaxAge", "7-00:00:00")) / DAY_S,
                             "source": f"PriorityMaxAge from {conf}"},
            "weight_size": {"value": w_size / 2 if n_nodes == 1 else w_size, "source": size_note},
            "weight_trace": {"value": 1.0, "source": (
                "each job's fixed priority part, PriorityWeightQOS x its QOS factor minus its nice "
                "(the workload's manifest; sprio -l shows the same split), is the table's priority "
                "column, counted once")},
            "age_capped": {"value": True, "source": "Slurm caps the age factor at PriorityMaxAge"},
            "integer": {"value": True, "source": (
                "Slurm keeps a job's priority as an integer (the weighted sum truncated) and sorts "
                "equal priorities by job id, i.e. submit order; with PriorityWeightAge "
                f"{cfg.get('PriorityWeightAge')} over PriorityMaxAge {cfg.get('PriorityMaxAge')} a "
                "job gains one point per ~10 minutes, so jobs of one size tie and a held, --begin "
                "or dependent job keeps its submit-order place (a real-valued age counted from the "
                "eligible time put it behind later submits). Found by this comparison.")},
            "calc_period_s": {"value": calc_period, "source": (
                f"PriorityCalcPeriod from {conf}: the decay thread recomputes every pending job's "
                "priority on this period, so ages change in steps (a job entering the queue keeps "
                "its submit-time priority, age 0, until the next tick); with ages counted "
                "continuously the simulator reordered jobs between ticks that Slurm had not. Found "
                "by this comparison.")},
            "calc_phase_s": {"value": calc_phase, "source": (
                f"BOOT_TIME {cfg.get('BOOT_TIME')} from {conf}, modulo PriorityCalcPeriod: the decay "
                "thread starts with slurmctld and ticks on its period from then, without drift "
                "(plugins/priority/multifactor _decay_thread)")},
        },
        "backfill": {
            "mode": {"value": "conservative", "source": (
                "sched/backfill reserves resources for every job it tests (up to bf_max_job_test), "
                "i.e. conservative backfill")},
            "bf_interval": {"value": int(sp.get("bf_interval", 30)), "source": f"SchedulerParameters from {conf}"},
            "bf_window": {"value": int(sp.get("bf_window", 1440)), "source": f"SchedulerParameters from {conf}"},
            "bf_resolution": {"value": int(sp.get("bf_resolution", 60)),
                              "source": f"SchedulerParameters from {conf}"},
            "bf_max_job_test": {"value": int(sp.get("bf_max_job_test", 100)),
                                "source": f"SchedulerParameters from {conf}"},
            "bf_continue": {"value": "bf_continue" in sp, "source": f"SchedulerParameters from {conf}"},
            "aligned": {"value": True, "source": (
                "slurmctld's backfill thread passes on the wall-clock grid of bf_interval: in the "
                "controller's log every backfill start falls on an epoch multiple of bf_interval "
                "(a second later when a pass runs long). Found by this comparison.")},
            "window_rounding": {"value": "slurm", "source": (
                "sched/backfill (22.05) plans with exact limit-based ends, rounds each reservation's "
                "start and end down to bf_resolution and counts a job whose window touches a "
                "reservation as overlapping it; rounding ends and limits up (the simulator's "
                "default) let small jobs start that Slurm held back. Found by this comparison.")},
            "whole_node": {"value": n_nodes == 1, "source": (
                "sched/backfill plans whole nodes: a job planned for later reserves its node "
                "(node_space_map holds node bitmaps, plugins/sched/backfill/backfill.c "
                "_add_reservation), so on this one-node partition it keeps every CPU free for its "
                "window; with CPU-level reservations the simulator backfilled small jobs Slurm "
                "held back. Found by this comparison.") if n_nodes == 1 else (
                "several nodes: the simulated nodes are nodes, whole by construction")},
            "planner": {"value": "slurm" if n_nodes == 1 else "profile", "source": (
                "sched/backfill places a job that cannot start now where select/cons_tres's will-run "
                "test on the RUNNING jobs says (their limit-based ends, removed in batches on a 30 s "
                "barrier); the reservations made before it in the pass only decide from when it is "
                "tested (a window touching one moves the test to that reservation's end), and its "
                "own reservation is refused only if the rounded windows overlap. So a job planned "
                "for when a running job ends can reserve the node up to a minute before a "
                "reservation it runs into; the profile planner placed it after that reservation and "
                "let small jobs start that Slurm held back. Found by this comparison.") if n_nodes == 1 else (
                "several nodes: Slurm's plan holds node bitmaps the simulator does not have; the "
                "earliest window that fits is the closest model")},
        },
        "user_limits": {},
        "model": {
            "warm_start": {"value": True, "source": "the replay starts at the first submit on an idle cluster"},
            "infer_dependencies": {"value": False, "source": "dependencies are recorded (the workload's manifest)"},
        },
    }
    if lim["max_jobs"] is not None:
        doc["user_limits"]["max_running_jobs"] = {
            "value": lim["max_jobs"], "source": f"MaxJobsPerUser of QOS {qos} (sacctmgr show qos, {when})"}
    if lim["max_cpus"] is not None:
        doc["user_limits"]["max_nodes"] = {
            "value": lim["max_cpus"], "source": f"MaxTRESPerUser=cpu of QOS {qos} (sacctmgr show qos, {when}); "
            "CPUs are the simulated nodes"}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# Derived from the running cluster by mirage.live.simcheck.describe_cluster\n"
                   + yaml.safe_dump(doc, sort_keys=False, width=100))
    return load_cluster("live", out), {"cpus": cpus, "nodes": n_nodes, "config": cfg, "qos": lim,
                                       "log": cfg.get("SlurmctldLogFile")}


class TemporaryQOS:
    """A QOS with per-user limits for the benchmark's jobs, granted to both users under the
    account, and removed again (grants first) when the block ends, whatever happened."""

    def __init__(self, slurm: Slurm, users: list[str], account: str, max_jobs: int, max_cpus: int,
                 name: str = QOS):
        self.slurm, self.users, self.account, self.name = slurm, users, account, name
        self.max_jobs, self.max_cpus = max_jobs, max_cpus

    def __enter__(self):
        s = self.slurm
        existing = s.run("sacctmgr", "-n", "-P", "show", "qos", "format=name").split()
        if self.name in existing:
            s.run("sacctmgr", "-i", "modify", "qos", self.name, "set", f"MaxJobsPerUser={self.max_jobs}",
                  f"MaxTRESPerUser=cpu={self.max_cpus}", "Priority=0")
        else:
            s.run("sacctmgr", "-i", "add", "qos", self.name, f"MaxJobsPerUser={self.max_jobs}",
                  f"MaxTRESPerUser=cpu={self.max_cpus}", "Priority=0")
        for u in self.users:
            s.run("sacctmgr", "-i", "modify", "user", "where", f"name={u}", f"account={self.account}",
                  "set", f"qos+={self.name}")
        # slurmctld learns association changes from slurmdbd: wait until it accepts the QOS
        end = time.monotonic() + 30
        while time.monotonic() < end:
            out = s.run("scontrol", "show", "assoc_mgr", "flags=qos", f"qos={self.name}", retry=False)
            if f"QOS={self.name}(" in out:
                break
            time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        s = self.slurm
        for u in self.users:
            try:
                s.run("sacctmgr", "-i", "modify", "user", "where", f"name={u}", f"account={self.account}",
                      "set", f"qos-={self.name}", retry=False)
            except SlurmError:
                pass
        try:
            s.run("sacctmgr", "-i", "delete", "qos", self.name, retry=False)
        except SlurmError:
            pass
        return False


def _progress(msg: str) -> None:
    print(f"mirage simcheck: {msg}", file=sys.stderr, flush=True)


def run_workload(jobs: list[WorkJob], slurm: Slurm, *, partition: str, account: str, qos: str,
                 users: tuple[str, str], out_dir: Path, tag: str, progress=_progress,
                 timeout_s: float | None = None) -> tuple[pd.DataFrame, dict[int, str]]:
    """Submit ``jobs`` on their schedule, release holds on theirs, wait for all of them, dump
    sacct. Returns (the dump as a DataFrame of strings, job key -> Slurm job id)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    busy = slurm.table("squeue", "-h", "-p", partition, "-o", "%i|%u", fields=("id", "user"))
    if busy:
        raise SimCheckError(f"partition {partition} is not idle ({len(busy)} jobs queued or running); "
                            "other jobs would change every start. Fix: wait until squeue is empty")
    actions = sorted([(j.submit_s, 0, j.key) for j in jobs]
                     + [(j.hold_s, 1, j.key) for j in jobs if j.hold_s is not None])
    by_key = {j.key: j for j in jobs}
    ids: dict[int, str] = {}
    t0 = time.monotonic()
    last = t0
    limit = timeout_s or (max(j.submit_s for j in jobs) + sum(j.run_s * j.cpus for j in jobs) * 3 + 600)
    try:
        for at, what, key in actions:
            wait = t0 + at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            j = by_key[key]
            if what == 1:
                slurm.run("scontrol", "release", ids[key])
                continue
            args = ["sbatch", "--parsable", "-A", account, "-p", partition, f"--qos={qos}",
                    "-J", f"{tag}-{key}-{j.kind}", "-n", str(j.cpus), "-t", str(j.limit_min),
                    "-o", "/dev/null", "-e", "/dev/null", f"--comment=simcheck {tag} key={key} kind={j.kind}"]
            if j.user:
                args.append(f"--uid={users[1]}")
            if j.hold_s is not None:
                args.append("--hold")
            if j.begin_s is not None:
                args.append(f"--begin=now+{j.begin_s}")
            if j.dep is not None:
                args.append(f"--dependency=afterany:{ids[j.dep]}")
            if j.nice:
                args.append(f"--nice={j.nice}")
            args += ["--wrap", f"sleep {j.run_s}"]
            ids[key] = slurm.run(*args).strip().split(";")[0]
            if time.monotonic() - last > 30:
                last = time.monotonic()
                progress(f"submitted {len(ids)}/{len(jobs)} ({time.monotonic() - t0:.0f} s)")
        progress(f"all {len(jobs)} jobs submitted ({time.monotonic() - t0:.0f} s); waiting for them to end")
        mine = set(ids.values())
        while True:
            q = slurm.table("squeue", "-h", "-o", "%i|%T", fields=("id", "state"))
            left = [r for r in q if r["id"] in mine]
            if not left:
                break
            if time.monotonic() - t0 > limit:
                raise SimCheckError(f"{len(left)} jobs still queued after {limit:.0f} s. Fix: look at squeue; "
                                    "the cluster may be down or drained")
            if time.monotonic() - last > 30:
                last = time.monotonic()
                run = sum(r["state"] == "RUNNING" for r in left)
                progress(f"{len(mine) - len(left)}/{len(mine)} done, {run} running, {len(left) - run} pending "
                         f"({time.monotonic() - t0:.0f} s)")
            time.sleep(2)
    except BaseException:
        if ids:
            slurm.run("scancel", *ids.values(), retry=False)
        raise
    # accounting catches up with the last ends within seconds
    end = time.monotonic() + 120
    while True:
        text = slurm.run("sacct", "-a", "-X", "--parsable2", "-o", SACCT_FIELDS, "-j", ",".join(ids.values()))
        dump = pd.read_csv(pd.io.common.StringIO(text), sep="|", dtype=str, keep_default_na=False)
        states = dump["State"].str.split().str[0]
        if len(dump) == len(ids) and states.isin(TERMINAL).all() and (dump["End"] != "Unknown").all():
            break
        if time.monotonic() > end:
            raise SimCheckError("sacct does not record every job's end. Fix: check slurmdbd (sacctmgr list cluster)")
        time.sleep(2)
    (out_dir / "sacct.txt").write_text(text)
    (out_dir / "manifest.json").write_text(json.dumps(
        {"tag": tag, "jobs": [asdict(j) | {"job_id": ids[j.key]} for j in jobs]}, indent=1))
    return dump, ids


def started_by(log_path: str | None, ids) -> dict[str, str]:
    """Which of Slurm's schedulers started each job, from slurmctld's log ("main", "backfill")."""
    out: dict[str, str] = {}
    if not log_path or not Path(log_path).is_file():
        return out
    want = set(ids)
    pat = re.compile(r"(sched: Allocate JobId=(\d+)|sched/backfill: _start_job: Started JobId=(\d+))")
    with open(log_path, errors="replace") as f:
        for line in f:
            m = pat.search(line)
            if m:
                jid = m.group(2) or m.group(3)
                if jid in want:
                    out[jid] = "main" if m.group(2) else "backfill"
    return out


# --------------------------------------------------------------------------- the comparison
def job_table(dump: pd.DataFrame, jobs: list[WorkJob], ids: dict[int, str], qos_weight: float = 0.0,
              qos_factor: float = 0.0) -> pd.DataFrame:
    """The sacct dump as the simulator's canonical job table: sizes are AllocCPUS, the recorded
    priority column is each job's fixed priority part, dependencies from the manifest."""
    by_id = {v: k for k, v in ids.items()}
    by_key = {j.key: j for j in jobs}
    rows = []
    for r in dump.itertuples(index=False):
        key = by_id.get(r.JobIDRaw)
        if key is None:
            continue
        j = by_key[key]
        rows.append({"job_id": r.JobIDRaw, "key": key, "kind": j.kind, "user": r.User, "submit": r.Submit,
                     "eligible": r.Eligible, "start": r.Start, "end": r.End,
                     "time_limit_min": int(r.TimelimitRaw), "nodes": int(r.AllocCPUS),
                     "priority": qos_weight * qos_factor - j.nice,
                     "depends_on": ids[j.dep] if j.dep is not None else None,
                     "state": r.State.split()[0], "slurm_priority": r.Priority})
    df = pd.DataFrame(rows)
    bad = df[df["start"].isin(["Unknown", "None", ""])]
    if len(bad):
        raise SimCheckError(f"{len(bad)} jobs never started ({', '.join(bad['job_id'][:5])}). Fix: look at "
                            "their sacct State; the comparison needs every job to run")
    for col in ("submit", "eligible", "start", "end"):
        df[col] = pd.to_datetime(df[col].replace({"Unknown": None}), errors="coerce").astype("datetime64[s]")
    # a dependent job is eligible when its parent ends (or at its submit, if later): slurmctld tests
    # dependencies as its scheduler builds the queue, right after the parent's end; sacct's
    # Eligible is the second that scheduler ran, up to 2 s later, and a main pass in the parent's
    # second would not see the job
    ends = df.set_index("job_id")["end"]
    dep = df["depends_on"].notna()
    parent_end = df.loc[dep, "depends_on"].map(ends)
    df.loc[dep, "eligible"] = np.maximum(df.loc[dep, "submit"], parent_end)
    return df


def compare(df: pd.DataFrame, cluster: ClusterDescription, by: dict[str, str] | None = None) -> pd.DataFrame:
    """Per job: real and simulated start. ``sim_start`` from one replay of the whole table (the
    probes too); for the probes also ``whatif_start``: the probe left out, a warm start from
    the recorded state at its submit, the probe inserted then."""
    table = JobTable.from_frame(df)
    pos = {j: i for i, j in enumerate(table.job_id)}
    t0 = int(table.submit.min())
    sim = warm_start(table, cluster, t0, record=True)
    sim.run_until(INF)
    sim_start = sim.trace_start
    out = df.copy()
    idx = np.array([pos[j] for j in df["job_id"]])
    out["real_start_s"] = table.start[idx] - t0
    out["sim_start_s"] = np.where(sim_start[idx] >= 0, sim_start[idx] - t0, -1)
    out["submit_s"] = table.submit[idx] - t0
    out["eligible_s"] = (table.eligible if table.eligible is not None else table.submit)[idx] - t0
    out["real_wait_s"] = out["real_start_s"] - out["submit_s"]
    out["error_s"] = out["sim_start_s"] - out["real_start_s"]
    out["whatif_start_s"] = np.nan
    for k, row in out[out["kind"] == "probe"].iterrows():
        i = pos[row["job_id"]]
        s = int(table.submit[i])
        w = warm_start(table, cluster, s, exclude=[i], record=False)
        jid = w.insert_job(s, int(table.nodes[i]), int(table.limit[i]), run_s=int(table.run[i]),
                           user=int(table.user[i]), priority=float(table.tprio[i]))
        if w.run_until(s + DAY_S, stop_jid=jid):
            out.loc[k, "whatif_start_s"] = w.starts[jid] - t0
    out["whatif_error_s"] = out["whatif_start_s"] - out["real_start_s"]
    # every job once more, from the recorded state at its submit (nothing left out): the error of
    # one job's scheduling, without the replay's earlier differences carried along the queue
    out["resync_start_s"] = np.nan
    for k, row in out.iterrows():
        i = pos[row["job_id"]]
        # a second earlier for a job that started at its submit (the warm start would take it as
        # running); it still enters the queue at its own eligible time
        s = min(int(table.submit[i]), int(table.start[i]) - 1)
        w = warm_start(table, cluster, s, record=True)
        if w.run_until(s + DAY_S, stop_jid=i):
            out.loc[k, "resync_start_s"] = int(w.trace_start[i]) - t0
    out["resync_error_s"] = out["resync_start_s"] - out["real_start_s"]
    # the last minute: from the recorded state STEP_S before the job's real start (or at its
    # eligible time, if later): what ran and what waited then, as Slurm recorded it; an early
    # start by the simulator shows up to STEP_S early, a held-back one as late
    out["step_start_s"] = np.nan
    elig = table.eligible if table.eligible is not None else table.submit
    for k, row in out.iterrows():
        i = pos[row["job_id"]]
        s = min(max(int(table.start[i]) - STEP_S, int(elig[i])), int(table.start[i]) - 1)
        w = warm_start(table, cluster, s, record=True)
        if w.run_until(s + DAY_S, stop_jid=i):
            out.loc[k, "step_start_s"] = int(w.trace_start[i]) - t0
    out["step_error_s"] = out["step_start_s"] - out["real_start_s"]
    by = by or {}
    out["real_by"] = [by.get(j, "unknown") for j in out["job_id"]]
    return out


def metrics(errors: np.ndarray, waits: np.ndarray, interval_s: int) -> dict:
    e = np.abs(np.asarray(errors, dtype=float))
    w = np.asarray(waits, dtype=float)
    if not len(e):
        return {"jobs": 0}
    mae = float(e.mean())
    mean_wait = float(w.mean())
    return {"jobs": int(len(e)), "within_interval": float((e <= interval_s).mean()),
            "within_60s": float((e <= 60).mean()), "mae_s": mae, "median_abs_s": float(np.median(e)),
            "max_abs_s": float(e.max()), "mean_wait_s": mean_wait,
            "mae_over_mean_wait": mae / mean_wait if mean_wait > 0 else None,
            "interval_s": int(interval_s)}


def explain(per_job: pd.DataFrame, row: pd.Series, res_s: int, interval_s: int, col: str = "sim_start_s") -> str:
    """Why one job's simulated start differs from Slurm's, from what the records show."""
    err = row[col] - row["real_start_s"]
    lo, hi = sorted((row[col], row["real_start_s"]))
    between = per_job[(per_job["real_start_s"] > lo) & (per_job["real_start_s"] < hi)
                      & (per_job["job_id"] != row["job_id"])]
    ended = per_job[((per_job["real_start_s"] + (per_job["end"] - per_job["start"]).dt.total_seconds())
                     .between(lo, hi)) & (per_job["job_id"] != row["job_id"])]
    parts = [f"sim {'later' if err > 0 else 'earlier'} by {abs(err):.0f} s",
             f"Slurm started it by {row['real_by']}" if row["real_by"] != "unknown" else "starter unknown"]
    if abs(err) <= 2 * interval_s and len(between) == 0:
        parts.append("no other job started in between: scheduler pass timing (Slurm runs its passes "
                     f"after events with a lag, backfill every {interval_s} s)")
    else:
        parts.append(f"{len(between)} other jobs started in between (a different order: ranking or "
                     f"backfill decision), {len(ended)} ended")
    if row["kind"] in ("held", "begin", "dep"):
        parts.append(f"{row['kind']} job, eligible at +{row['eligible_s']:.0f} s")
    if row["real_by"] == "backfill" and res_s > 1:
        parts.append(f"backfill plans with limit-based ends at bf_resolution={res_s} s")
    return "; ".join(parts)


def report(per_job: pd.DataFrame, cluster: ClusterDescription, worst: int = 8) -> dict:
    interval = int(cluster.backfill.interval_s)
    res = int(cluster.backfill.resolution_s)
    started = per_job[per_job["sim_start_s"] >= 0]
    out = {"jobs": metrics(started["error_s"], started["real_wait_s"], interval),
           "not_started_in_sim": int((per_job["sim_start_s"] < 0).sum())}
    probes = per_job[(per_job["kind"] == "probe") & per_job["whatif_start_s"].notna()]
    out["probes"] = metrics(probes["whatif_error_s"], probes["real_wait_s"], interval)
    out["probes_replay"] = metrics(probes["error_s"], probes["real_wait_s"], interval)
    rs = per_job[per_job["resync_start_s"].notna()]
    out["resync"] = metrics(rs["resync_error_s"], rs["real_wait_s"], interval)
    st = per_job[per_job["step_start_s"].notna()]
    out["step"] = metrics(st["step_error_s"], st["real_wait_s"], interval)
    out["by_kind"] = {k: metrics(g["error_s"], g["real_wait_s"], interval)
                      for k, g in started.groupby("kind")}
    out["by_starter"] = {k: metrics(g["error_s"], g["real_wait_s"], interval)
                         for k, g in started.groupby("real_by")}
    w = started.reindex(started["error_s"].abs().sort_values(ascending=False).index)[:worst]
    out["worst_jobs"] = [{"job_id": r["job_id"], "kind": r["kind"], "cpus": int(r["nodes"]),
                          "limit_min": int(r["time_limit_min"]), "real_start_s": int(r["real_start_s"]),
                          "sim_start_s": int(r["sim_start_s"]), "error_s": int(r["error_s"]),
                          "why": explain(per_job, r, res, interval)} for _, r in w.iterrows()]
    wp = probes.reindex(probes["whatif_error_s"].abs().sort_values(ascending=False).index)[:worst]
    out["worst_probes"] = [{"job_id": r["job_id"], "cpus": int(r["nodes"]), "real_start_s": int(r["real_start_s"]),
                            "whatif_start_s": int(r["whatif_start_s"]), "error_s": int(r["whatif_error_s"]),
                            "why": explain(per_job, r, res, interval, "whatif_start_s")}
                           for _, r in wp.iterrows()]
    return out


def format_report(rep: dict) -> str:
    lines = []
    for name in ("jobs", "probes", "resync", "step"):
        m = rep[name]
        if not m.get("jobs"):
            lines.append(f"{name}: none")
            continue
        rel = m["mae_over_mean_wait"]
        lines.append(f"{name} ({m['jobs']}): within one scheduling interval ({m['interval_s']} s) "
                     f"{m['within_interval']:.3f}, within 60 s {m['within_60s']:.3f}, MAE {m['mae_s']:.1f} s "
                     f"= {100 * rel:.1f} % of the mean wait {m['mean_wait_s']:.1f} s "
                     f"(median |error| {m['median_abs_s']:.1f} s, max {m['max_abs_s']:.0f} s)"
                     if rel is not None else f"{name}: mean wait 0")
    for k, m in rep["by_kind"].items():
        lines.append(f"  kind {k:6s} ({m['jobs']:3d}): within interval {m['within_interval']:.3f}, "
                     f"60 s {m['within_60s']:.3f}, MAE {m['mae_s']:.1f} s")
    for k, m in rep["by_starter"].items():
        lines.append(f"  started by {k:8s} ({m['jobs']:3d}): within interval {m['within_interval']:.3f}, "
                     f"MAE {m['mae_s']:.1f} s")
    lines.append("worst jobs:")
    lines += [f"  {w['job_id']} ({w['kind']}, {w['cpus']} CPUs, {w['limit_min']} min): real +{w['real_start_s']} s, "
              f"sim +{w['sim_start_s']} s: {w['why']}" for w in rep["worst_jobs"]]
    lines.append("worst probes:")
    lines += [f"  {w['job_id']} ({w['cpus']} CPUs): real +{w['real_start_s']} s, what-if +{w['whatif_start_s']} s: "
              f"{w['why']}" for w in rep["worst_probes"]]
    return "\n".join(lines)


def _qos_factor(slurm: Slurm, qos: str) -> float:
    """Slurm's QOS factor: the QOS's priority over the largest QOS priority of the cluster."""
    names = slurm.run("sacctmgr", "-n", "-P", "show", "qos", "format=name").split()
    top = max([qos_limits(slurm, n)["priority"] for n in names] or [0])
    return qos_limits(slurm, qos)["priority"] / top if top > 0 else 0.0


def analyze(out_dir: Path, cluster_file: str | Path | None = None) -> dict:
    """Compare again from what a run wrote (sacct.txt, manifest.json, run.json, cluster.yaml),
    without Slurm: the replay side only, e.g. with another cluster description."""
    out_dir = Path(out_dir)
    need = [out_dir / n for n in ("sacct.txt", "manifest.json", "run.json")]
    missing = [str(p) for p in need if not p.is_file()]
    if missing:
        raise SimCheckError(f"{', '.join(missing)} missing: not the directory of a finished run. Fix: "
                            "pass the --out directory of a `mirage bench slurm-sim` that finished")
    run = json.loads((out_dir / "run.json").read_text())
    man = json.loads((out_dir / "manifest.json").read_text())
    jobs = [WorkJob(**{k: v for k, v in j.items() if k != "job_id"}) for j in man["jobs"]]
    ids = {j["key"]: j["job_id"] for j in man["jobs"]}
    dump = pd.read_csv(out_dir / "sacct.txt", sep="|", dtype=str, keep_default_na=False)
    cluster = load_cluster("live", cluster_file or out_dir / "cluster.yaml")
    df = job_table(dump, jobs, ids, run["qos_weight"], run["qos_factor"])
    # the dump as a trace in the canonical table (sizes in CPUs): `mirage sim calibrate` reads it
    df.to_parquet(out_dir / "trace.parquet", index=False)
    per_job = compare(df, cluster, run.get("started_by") or started_by(run.get("log"), df["job_id"]))
    per_job.to_csv(out_dir / "per_job.csv", index=False)
    rep = report(per_job, cluster)
    rep["workload"] = run["spec"]
    rep["wall_s"] = run["wall_s"]
    rep["cluster_file"] = str(cluster_file or out_dir / "cluster.yaml")
    (out_dir / "report.json").write_text(json.dumps(rep, indent=1))
    return rep


def against_run(out_dir: Path, other_dir: Path) -> dict:
    """Slurm against itself: the real starts of this run against those of another run of the same
    workload (same seed and settings) on the same cluster, job by job (matched by workload key,
    each start from its own run's first submit). How far two runs of slurmctld drift apart is
    the floor under any simulator's replay error on this workload."""
    runs = []
    for d in (Path(out_dir), Path(other_dir)):
        files = [d / "manifest.json", d / "per_job.csv", d / "run.json", d / "cluster.yaml"]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise SimCheckError(f"{', '.join(missing)} missing. Fix: pass the --out directory of a finished "
                                "`mirage bench slurm-sim` run")
        man = json.loads((d / "manifest.json").read_text())
        spec = json.loads((d / "run.json").read_text())["spec"]
        jobs = [{k: v for k, v in j.items() if k != "job_id"} for j in man["jobs"]]
        runs.append((spec, jobs, pd.read_csv(d / "per_job.csv").set_index("key")))
    (spec_a, jobs_a, a), (spec_b, jobs_b, b) = runs
    if spec_a != spec_b or jobs_a != jobs_b:
        raise SimCheckError(f"{out_dir} and {other_dir} ran different workloads ({spec_a} / {spec_b}). Fix: "
                            "compare two runs with the same --jobs, --seed and workload settings")
    keys = a.index.intersection(b.index)
    err = b.loc[keys, "real_start_s"] - a.loc[keys, "real_start_s"]
    interval = int(load_cluster("live", Path(out_dir) / "cluster.yaml").backfill.interval_s)
    out = {"other_run": str(other_dir), "jobs": metrics(err, a.loc[keys, "real_wait_s"], interval)}
    probes = [k for k in keys if a.loc[k, "kind"] == "probe"]
    out["probes"] = metrics(err[probes], a.loc[probes, "real_wait_s"], interval)
    out["mean_shift_s"] = float(err.mean())
    return out


def format_against(rep: dict) -> str:
    lines = [f"Slurm against itself (the same workload run again: {rep['other_run']}):"]
    for k in ("jobs", "probes"):
        m = rep[k]
        lines.append(f"  {k} ({m['jobs']}): within one scheduling interval ({m['interval_s']} s) "
                     f"{m['within_interval']:.3f}, within 60 s {m['within_60s']:.3f}, MAE {m['mae_s']:.1f} s = "
                     f"{100 * m['mae_over_mean_wait']:.1f} % of the mean wait (median |difference| "
                     f"{m['median_abs_s']:.1f} s)")
    lines.append(f"  the other run's starts are {rep['mean_shift_s']:+.1f} s later on average")
    return "\n".join(lines)


#: the description as first derived (Slurm's settings read literally), then each change the
#: comparison made, cumulatively: (label, YAML path, value)
ABLATION = (
    ("settings read literally (size weight as configured, CPU-level reservations, ends rounded up, "
     "real-valued priority, backfill on demand)", None, None),
    ("+ size weight halved (node share constant)", ("priority", "weight_size"), "halve"),
    ("+ integer priority, ties in submit order", ("priority", "integer"), True),
    ("+ backfill on the wall-clock grid", ("backfill", "aligned"), True),
    ("+ Slurm's reservation windows", ("backfill", "window_rounding"), "slurm"),
    ("+ whole-node reservations", ("backfill", "whole_node"), True),
    ("+ Slurm's planner: will-run on the running jobs", ("backfill", "planner"), "slurm"),
    ("+ ages recomputed every PriorityCalcPeriod (= derived description)", ("priority", "calc_period_s"),
     "derived"),
)


def ablation(out_dir: Path) -> list[dict]:
    """The report's headline figures for the description as first derived and after each change
    the comparison made (cumulative), from a finished run's files (no Slurm)."""
    import yaml

    out_dir = Path(out_dir)
    final = yaml.safe_load((out_dir / "cluster.yaml").read_text())
    base = json.loads(json.dumps(final))
    base["priority"]["weight_size"]["value"] = final["priority"]["weight_size"]["value"] * (
        2 if "halved" in final["priority"]["weight_size"]["source"] else 1)
    base["priority"]["integer"]["value"] = False
    base["backfill"]["aligned"]["value"] = False
    base["backfill"]["window_rounding"]["value"] = "up"
    base["backfill"]["whole_node"]["value"] = False
    # a run derived before a setting existed has no entry for it: its row is left out
    base["backfill"]["planner"] = {"value": "profile", "source": "the simulator's default"}
    base["priority"]["calc_period_s"] = {"value": 0, "source": "the simulator's default"}
    rows = []
    doc = base
    for label, path, value in ABLATION:
        if path is not None:
            if value == "derived" and path[1] not in final[path[0]]:
                continue
            doc = json.loads(json.dumps(doc))
            doc[path[0]][path[1]]["value"] = (doc[path[0]][path[1]]["value"] / 2 if value == "halve"
                                              else final[path[0]][path[1]]["value"] if value == "derived"
                                              else value)
        f = out_dir / "ablation.yaml"
        f.write_text(yaml.safe_dump(doc, sort_keys=False))
        rep = analyze(out_dir, f)
        rows.append({"variant": label, **{k: rep[k] for k in ("jobs", "probes", "resync", "step")}})
    f.unlink()
    analyze(out_dir)  # per_job.csv and report.json of the derived description again
    return rows


def format_ablation(rows: list[dict]) -> str:
    out = ["variant | replay: within interval, within 60 s, MAE/mean wait | probes | every job from "
           "the recorded state at its submit | the last minute (from the state 60 s before its start)"]
    for r in rows:
        cells = [f"{m['within_interval']:.3f} {m['within_60s']:.3f} {100 * m['mae_over_mean_wait']:.1f} %"
                 for m in (r["jobs"], r["probes"], r["resync"], r["step"])]
        out.append(" | ".join([r["variant"], *cells]))
    return "\n".join(out)


def run_check(spec: WorkloadSpec, out_dir: Path, *, slurm: Slurm | None = None, partition: str = "gpu",
              account: str = "mirage", user2: str = "mirage-bg", qos: str | None = None,
              qos_jobs: int = 4, qos_cpus: int = 12, cluster_file: str | None = None,
              progress=_progress) -> dict:
    """The whole check: describe, run, dump, compare. Writes into ``out_dir``: cluster.yaml,
    sacct.txt, manifest.json, per_job.csv, report.json. Returns the report."""
    import getpass

    slurm = slurm or Slurm()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    user1 = getpass.getuser()
    tag = f"simcheck{spec.seed}"

    def go(q: str) -> dict:
        _, info = describe_cluster(slurm, partition, q, out_dir / "cluster.yaml")
        if cluster_file:
            load_cluster("live", cluster_file)  # a bad file fails now, not after the run
        jobs = make_workload(spec, info["cpus"], info["qos"]["max_cpus"])
        progress(f"{len(jobs)} jobs on {info['cpus']} CPUs, QOS {q} ({info['qos']}); "
                 f"the last submission at +{max(j.submit_s for j in jobs):.0f} s")
        t = time.monotonic()
        dump, ids = run_workload(jobs, slurm, partition=partition, account=account, qos=q,
                                 users=(user1, user2), out_dir=out_dir, tag=tag, progress=progress)
        wall = time.monotonic() - t
        (out_dir / "run.json").write_text(json.dumps({
            "spec": asdict(spec), "wall_s": round(wall, 1), "qos": q, "log": info["log"],
            "qos_weight": float(info["config"].get("PriorityWeightQOS", 0)),
            "qos_factor": _qos_factor(slurm, q), "started_by": started_by(info["log"], ids.values())}, indent=1))
        return analyze(out_dir, cluster_file)

    import signal
    import threading

    old = None
    if threading.current_thread() is threading.main_thread():
        # a SIGTERM (timeout, a scheduler) cancels the jobs and removes the QOS like Ctrl-C
        def _term(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")
        old = signal.signal(signal.SIGTERM, _term)
    try:
        if qos:
            return go(qos)
        with TemporaryQOS(slurm, [user1, user2], account, qos_jobs, qos_cpus):
            return go(QOS)
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
