"""The live provisioner: keeps a chain of batch jobs (a service) running on a real Slurm,
submitting each successor when a policy says so, or at once when its predecessor has ended.

Never twice, never lost: the state (``DIR/state.json``) is written atomically (write, fsync,
rename) after every change, and the intent to submit a link is written *before* ``sbatch``. A
provisioner killed at any moment and restarted on the same directory first looks every link
it meant to submit up by its job name (``mirage-<chain>-<link>``) in squeue and sacct, adopts
what it finds and submits only what is missing. A lock (``DIR/lock``) keeps a second
provisioner off the same directory.

Each handover (link k-1 -> k) is one JSON line in ``DIR/handovers.jsonl`` with the same
definitions as the evaluation tables: x = successor start - predecessor end; interruption
max(0, x), overlap max(0, -x), overlap node-hours = overlap x nodes.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mirage.errors import MirageError
from mirage.live.observe import LiveObserver, epoch, now_s
from mirage.live.slurm import Slurm, SlurmError
from mirage.units import HOUR_S

#: A link that ends by its time limit ended normally: that is how a service link ends.
NORMAL_END = {"COMPLETED", "TIMEOUT"}
TERMINAL = NORMAL_END | {"FAILED", "CANCELLED", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
                         "DEADLINE", "REVOKED", "SPECIAL_EXIT"}
STATE_VERSION = 1
#: Fault injection for the tests: ``after-sbatch:K`` kills the provisioner (SIGKILL) right
#: after sbatch accepted link K and before the state records it, the hardest moment to die.
FAILPOINT = "MIRAGE_PROVISION_FAILPOINT"


class ProvisionError(MirageError):
    """The chain cannot go on (another provisioner holds the directory, a refused job, ...)."""


@dataclass
class ChainSpec:
    """What the chain is: fixed when it is created, checked when a provisioner resumes it."""

    script: str
    links: int
    nodes: int
    time_min: int
    policy: str
    partition: str | None = None
    account: str | None = None
    unit: str = "nodes"
    time_scale: float = 1.0
    on_failure: str = "continue"
    sbatch_args: list[str] = field(default_factory=list)


class StateDir:
    """state.json (atomic), handovers.jsonl (append, fsync), provision.log and the lock."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.state_file = self.path / "state.json"
        self.handovers_file = self.path / "handovers.jsonl"
        self.stop_file = self.path / "stop"
        self._lock = None

    def lock(self) -> None:
        fd = open(self.path / "lock", "a+")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fd.seek(0)
            holder = fd.read().strip() or "another process"
            fd.close()
            raise ProvisionError(f"{self.path} is in use by a running provisioner (pid {holder}). Fix: "
                                 "stop it first (`mirage provision stop`), or use another --state-dir") from None
        fd.seek(0)
        fd.truncate()
        fd.write(str(os.getpid()))
        fd.flush()
        self._lock = fd

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def load(self) -> dict | None:
        if not self.state_file.exists():
            return None
        try:
            return json.loads(self.state_file.read_text())
        except json.JSONDecodeError as exc:
            raise ProvisionError(f"{self.state_file} is not valid JSON ({exc}). Fix: restore it from "
                                 f"{self.state_file}.bak or start the chain in a new --state-dir") from None

    def save(self, state: dict) -> None:
        tmp = self.state_file.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump(state, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        if self.state_file.exists():
            os.replace(self.state_file, self.state_file.with_suffix(".json.bak"))
        os.replace(tmp, self.state_file)
        dirfd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)

    def append_handover(self, record: dict) -> None:
        with open(self.handovers_file, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def handovers(self) -> list[dict]:
        if not self.handovers_file.exists():
            return []
        return [json.loads(line) for line in self.handovers_file.read_text().splitlines() if line.strip()]


def summary(handovers: list[dict]) -> dict:
    """Mean interruption, overlap node-hours and the zero-interruption share, as evaluated."""
    n = len(handovers)
    if n == 0:
        return {"handovers": 0}
    inter = [h["interruption_s"] / HOUR_S for h in handovers]
    return {
        "handovers": n,
        "mean_interruption_h": sum(inter) / n,
        "max_interruption_h": max(inter),
        "overlap_node_hours": sum(h["overlap_node_hours"] for h in handovers),
        "zero_interruption_share": sum(1 for h in handovers if h["interruption_s"] <= 0) / n,
    }


class Provisioner:
    """One chain, stepped by :meth:`step` (restartable at any point) or run by :meth:`run`."""

    def __init__(self, spec: ChainSpec, state_dir, policy, *, slurm: Slurm | None = None,
                 interval_s: float = 600, log: Callable[[str], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.spec = spec
        self.dir = StateDir(state_dir)
        self.policy = policy
        self.slurm = slurm or Slurm(log=self.log)  # retries go to provision.log too
        self.interval_s = interval_s
        self._log = log
        self.sleep = sleep
        self.state: dict = {}

    # ---- state -------------------------------------------------------------------------
    def log(self, message: str) -> None:
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}"
        with open(self.dir.path / "provision.log", "a") as f:
            f.write(line + "\n")
        if self._log:
            self._log(line)

    def open(self) -> None:
        """Create the chain's state, or resume the one in the directory (same chain only)."""
        state = self.dir.load()
        spec = asdict(self.spec)
        if state is None:
            state = {"version": STATE_VERSION, "chain_id": secrets.token_hex(4), "spec": spec,
                     "created": now_s(), "links": [], "handovers": [], "done": False, "stopped": None}
            self.state = state
            self.save()
            self.log(f"chain {state['chain_id']}: {self.spec.links} links of {self.spec.nodes} x "
                     f"{self.spec.time_min} min, policy {self.spec.policy}")
            return
        differs = [k for k in ("script", "links", "nodes", "time_min") if state["spec"].get(k) != spec[k]]
        if differs:
            raise ProvisionError(f"{self.dir.path} holds chain {state['chain_id']} with other "
                                 f"{', '.join(differs)}. Fix: resume it with the same arguments, or use "
                                 "another --state-dir for a new chain")
        self.state = state
        self.log(f"chain {state['chain_id']}: resumed ({len(state['links'])} links submitted)")
        if state["stopped"]:
            # started again by hand: go on, past the failed link that stopped it
            self.log(f"chain {state['chain_id']}: was stopped ({state['stopped']}); going on")
            state["stopped"] = None
            state.setdefault("failures_passed", []).extend(r["link"] for r in state["links"]
                                                           if r["state"] in TERMINAL - NORMAL_END)
            self.dir.stop_file.unlink(missing_ok=True)
            self.save()

    def save(self) -> None:
        self.dir.save(self.state)

    def observer(self) -> LiveObserver:
        """The live view of the chain's partition, in the chain's sizes and time scale."""
        s = self.spec
        return LiveObserver(self.slurm, chain_nodes=s.nodes, limit_min=s.time_min, partition=s.partition,
                            account=s.account, unit=s.unit, time_scale=s.time_scale,
                            origin=self.state["created"])

    def name(self, link: int) -> str:
        return f"mirage-{self.state['chain_id']}-{link}"

    # ---- Slurm ---------------------------------------------------------------------------
    def _find(self, name: str) -> list[str]:
        ids = {r["id"] for r in self.slurm.table("squeue", "-h", "-t", "all", f"--name={name}", "-o", "%i",
                                                  fields=("id",))}
        try:
            ids |= {r["id"] for r in self.slurm.table("sacct", "-X", "-n", "--parsable2", f"--name={name}",
                                                       "-S", "now-30days", "-o", "JobID", fields=("id",),
                                                       retry=False)}
        except SlurmError:
            pass  # no accounting: squeue's view (MinJobAge) is all there is
        return sorted(ids, key=int)

    def _query(self, ids: list[str]) -> dict[str, dict]:
        """State, start and end of the given jobs: squeue while it knows them, then sacct."""
        found = {}
        rows = self.slurm.table("squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i|%T|%S|%e",
                                fields=("id", "state", "start", "end"))
        for r in rows:
            found[r["id"]] = r
        missing = [i for i in ids if i not in found]
        if missing:
            try:
                rows = self.slurm.table("sacct", "-X", "-n", "--parsable2", "-j", ",".join(missing),
                                        "-o", "JobID,State,Start,End", fields=("id", "state", "start", "end"),
                                        retry=False)
            except SlurmError:
                rows = []
            for r in rows:
                found[r["id"]] = r
        for r in found.values():
            r["state"] = r["state"].split()[0]
        return found

    def _sbatch(self, link: int, reason: str) -> str:
        s = self.spec
        size = ["-n", str(s.nodes)] if s.unit == "cpus" else ["-N", str(s.nodes)]
        pred = next((r["job_id"] for r in self.state["links"] if r["link"] == link - 1), None)
        env = (f"--export=ALL,MIRAGE_CHAIN_ID={self.state['chain_id']},MIRAGE_LINK={link},"
               f"MIRAGE_PREDECESSOR_JOB={pred or ''}")
        args = ["sbatch", "--parsable", f"--job-name={self.name(link)}", env,
                f"--comment=mirage chain={self.state['chain_id']} link={link}/{s.links} reason={reason}",
                *size, f"--time={s.time_min}", f"--output={self.dir.path}/link-{link}-%j.out",
                *([f"--partition={s.partition}"] if s.partition else []),
                *([f"--account={s.account}"] if s.account else []), *s.sbatch_args, s.script]
        # no blind retry: a timed-out sbatch may have got through (see _submit)
        return self.slurm.run(*args, retry=False).strip().split(";")[0]

    # ---- the chain -------------------------------------------------------------------------
    def submit(self, link: int, reason: str) -> None:
        rec = {"link": link, "name": self.name(link), "job_id": None, "intent": now_s(), "reason": reason,
               "submitted": None, "state": None, "start": None, "end": None}
        self.state["links"].append(rec)
        self.save()  # the intent first: a kill right after sbatch finds the job by its name
        self._submit(rec)

    def _submit(self, rec: dict) -> None:
        try:
            job_id = self._sbatch(rec["link"], rec["reason"])
        except SlurmError as exc:
            if not exc.transient:
                raise
            # sbatch failed as a busy controller fails: it may have got the job in all the same
            ids = self._find(rec["name"])
            if not ids:
                raise  # the next step looks again (the intent is saved) and submits if still absent
            job_id = ids[0]
        if os.environ.get(FAILPOINT) == f"after-sbatch:{rec['link']}":
            os.kill(os.getpid(), signal.SIGKILL)
        rec.update(job_id=job_id, submitted=now_s(), state="PENDING")
        self.save()
        self.log(f"link {rec['link']}: submitted job {job_id} ({rec['reason']})")

    def reconcile(self) -> None:
        links = self.state["links"]
        for rec in links:
            if rec["job_id"] is not None:
                continue
            # killed between the intent and the state write: did sbatch get through?
            ids = self._find(rec["name"])
            if ids:
                rec.update(job_id=ids[0], submitted=rec["intent"], state="PENDING")
                self.save()
                self.log(f"link {rec['link']}: found job {ids[0]}, submitted before a restart")
            else:
                self.log(f"link {rec['link']}: not submitted before a restart; submitting it now")
                self._submit(rec)
        live = [r for r in links if r["state"] not in TERMINAL]
        if not live:
            return
        info = self._query([r["job_id"] for r in live])
        changed = False
        for rec in live:
            row = info.get(rec["job_id"])
            if row is None:
                continue
            state, start, end = row["state"], epoch(row["start"]), epoch(row["end"])
            started = state in ("RUNNING", "COMPLETING") or (state in TERMINAL and start is not None)
            new = {"state": state, "start": start if started else None,
                   "end": end if state in TERMINAL else None}
            if any(rec[k] != v for k, v in new.items()):
                if new["state"] != rec["state"]:
                    self.log(f"link {rec['link']}: job {rec['job_id']} {rec['state']} -> {state}")
                    if state in TERMINAL and state not in NORMAL_END:
                        self.log(f"link {rec['link']}: job {rec['job_id']} ended {state}; "
                                 f"on failure: {self.spec.on_failure}")
                rec.update(new)
                changed = True
        if changed:
            self.save()

    def handovers(self) -> None:
        links = {r["link"]: r for r in self.state["links"]}
        for k in range(2, self.spec.links + 1):
            if k in self.state["handovers"] or k not in links or k - 1 not in links:
                continue
            succ, pred = links[k], links[k - 1]
            if succ["start"] is None or pred["end"] is None:
                continue
            x = succ["start"] - pred["end"]
            record = {"link": k, "job_id": succ["job_id"], "predecessor_job_id": pred["job_id"],
                      "submitted": succ["submitted"], "started": succ["start"], "predecessor_end": pred["end"],
                      "predecessor_state": pred["state"], "interruption_s": max(0, x), "overlap_s": max(0, -x),
                      "overlap_node_hours": max(0, -x) * self.spec.nodes / HOUR_S, "reason": succ["reason"],
                      "policy": self.spec.policy, "chain_id": self.state["chain_id"]}
            self.dir.append_handover(record)
            self.state["handovers"].append(k)
            self.save()
            self.log(f"handover {k - 1} -> {k}: interruption {record['interruption_s']} s, "
                     f"overlap {record['overlap_s']} s ({succ['reason']})")

    def act(self, observer: LiveObserver | None, dry_run: bool = False) -> str:
        """One decision; returns what it did (or would do)."""
        links, n = self.state["links"], self.spec.links
        if not links:
            if not dry_run:
                self.submit(1, "first")
            return "submit link 1"
        last = links[-1]
        if last["state"] in TERMINAL:
            failed = last["state"] not in NORMAL_END and last["link"] not in self.state.get("failures_passed", [])
            if failed and self.spec.on_failure == "stop":
                self.state["stopped"] = f"link {last['link']} ended {last['state']}"
                self.save()
                return f"stop: {self.state['stopped']}"
            if last["link"] >= n:
                self.state["done"] = True
                self.save()
                return "done"
            if not dry_run:
                self.submit(last["link"] + 1, "reactive")
            return f"submit link {last['link'] + 1} (reactive: link {last['link']} ended)"
        if last["state"] != "RUNNING" or last["link"] >= n or observer is None:
            return "wait"
        obs = self.observe(observer, last)
        if self.policy.decide(obs):
            if not dry_run:
                self.submit(last["link"] + 1, "policy")
            return (f"submit link {last['link'] + 1} (policy: {obs.row['pred_remaining_h']:.2f} h left, "
                    f"plan wait {obs.row['f_plan_wait_h']:.2f} h)")
        return f"wait (policy: {obs.row['pred_remaining_h']:.2f} h left)"

    def observe(self, observer: LiveObserver, last: dict):
        """What the policy decides from at this step, the running link ``last`` being the
        predecessor: the point's features, and the live queue (squeue with users and
        dependencies) for a policy whose catalogue entry says it needs it (``needs_queue``)."""
        from mirage.features.view import point_features
        from mirage.policies.base import Observation
        from mirage.policies.catalogue import CATALOGUE

        row = point_features(observer.view(last["submitted"], last["start"]))
        name = getattr(self.policy, "name", None)  # spec.policy may be a model directory
        if not (name in CATALOGUE and CATALOGUE[name].needs_queue):
            return Observation(row)
        from mirage.twin.policy import QueueObservation

        return QueueObservation(row, queue=observer.queue_view(last["job_id"], last["submitted"],
                                                               last["start"]))

    def step(self, observer: LiveObserver | None) -> str:
        self.reconcile()
        self.handovers()
        if self.state["done"] or self.state["stopped"]:
            return "done" if self.state["done"] else f"stopped: {self.state['stopped']}"
        return self.act(observer)

    def run(self) -> dict:
        """Provision until the chain's last link has ended (or it is stopped); the summary."""
        self.dir.lock()
        try:
            self.open()
            observer = self.observer()
            while True:
                if self.dir.stop_file.exists() and not self.state["stopped"]:
                    self.state["stopped"] = self.dir.stop_file.read_text().strip() or "stopped"
                    self.save()
                try:
                    did = self.step(observer)
                except SlurmError as exc:
                    if not exc.transient:
                        raise
                    # the controller is away for longer than the retries wait: the state is
                    # saved, so the next step picks up where this one failed
                    self.log(f"step failed, next try in {self.interval_s:g} s: {exc}")
                    did = "wait"
                if did == "done" or did.startswith("stop"):
                    break
                self.sleep(self.interval_s)
            result = {"chain_id": self.state["chain_id"], "state": did, **summary(self.dir.handovers())}
            (self.dir.path / "summary.json").write_text(json.dumps(result, indent=1) + "\n")
            self.log(f"chain {self.state['chain_id']}: {did}; {json.dumps(summary(self.dir.handovers()))}")
            return result
        finally:
            self.dir.unlock()


def load_policy_spec(spec: str, params: dict | None = None):
    """A fitted policy directory of the workflow (``results/C/M/models/nK/POLICY``), or a rule
    baseline by name (reactive, average, fixed_lead, plan_lead, with ``params``)."""
    from mirage.policies import make_policy

    path = Path(spec)
    if path.is_dir():
        from mirage.policies.registry import load_policy

        for model in ("model.pt", "model.joblib"):
            if (path / model).exists():
                return load_policy(path / model, device="cpu")
        raise ProvisionError(f"{path} holds no model.pt or model.joblib. Fix: pass a fitted policy directory "
                             "the workflow wrote, results/<run>/<cluster>/<mode>/models/n<nodes>/<policy>")
    params = dict(params or {})
    if spec in ("fixed_lead", "plan_lead"):
        params.setdefault("tune", False)
    if spec not in ("reactive", "average", "fixed_lead", "plan_lead"):
        raise ProvisionError(f"policy {spec!r} must be fitted first. Fix: pass its directory from a workflow "
                             "run (results/<run>/<cluster>/<mode>/models/n<nodes>/<policy>), or one of the rule "
                             "baselines reactive, average, fixed_lead, plan_lead")
    return make_policy(spec, **params)


def status(state_dir) -> dict:
    d = StateDir(state_dir)
    state = d.load()
    if state is None:
        raise ProvisionError(f"{state_dir} holds no chain (no state.json). Fix: check the --state-dir")
    return {"state": state, "handovers": d.handovers(), "summary": summary(d.handovers())}


def stop(state_dir, slurm: Slurm | None = None, cancel: bool = False) -> list[str]:
    """Ask the chain's provisioner to stop at its next step (``DIR/stop``); with ``cancel``,
    also cancel the chain's own unfinished jobs, and never any other. Returns those ids."""
    d = StateDir(state_dir)
    state = d.load()
    if state is None:
        raise ProvisionError(f"{state_dir} holds no chain (no state.json). Fix: check the --state-dir")
    tmp = d.stop_file.with_suffix(".tmp")
    tmp.write_text(f"stopped by mirage provision stop at {time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
    os.replace(tmp, d.stop_file)
    ids = [r["job_id"] for r in state["links"] if r["job_id"] and r["state"] not in TERMINAL]
    if cancel and ids:
        (slurm or Slurm()).run("scancel", *ids)
    return ids if cancel else []
