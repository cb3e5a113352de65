"""Slurm's own commands, called with a timeout, bounded retries and one clear error.

Everything the project does on a live cluster goes through :class:`Slurm`: a command that is
missing names the fix; one that fails because the controller is restarting or slow is retried
with doubling pauses, one log line per retry; one that keeps failing raises
:class:`SlurmError` with Slurm's own message. Outputs are read in their parsable forms
(``--parsable2``, ``-o`` with ``|``), never by screen-scraping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mirage.errors import MirageError

#: Fragments of Slurm's messages for failures that pass: the controller restarting, busy or
#: briefly unreachable, slurmdbd catching up, and, just after a controller restart, nodes whose
#: slurmd has not registered again yet ("Requested node configuration is not available" for a
#: request that fits once they have: seen in CI, `sbatch --test-only` 13 s after a restart; a
#: request that never fits gets the same message after the retries). Anything else (a refused
#: job, a bad option) is final at once.
TRANSIENT = (
    "unable to contact slurm controller",
    "socket timed out",
    "connection refused",
    "connect failure",
    "zero bytes were transmitted",
    "slurm backup controller in standby mode",
    "resource temporarily unavailable",
    "communication connection failure",
    "problem talking to the database",
    "slurmdbd: connection",
    "timed out after",
    "requested node configuration is not available",
)

CLIENT_FIX = ("run this where Slurm's client commands work (a login node of the cluster), or "
              "install them (Debian: apt-get install slurm-client) or load your site's Slurm "
              "module")


class SlurmError(MirageError):
    """A Slurm command is missing, or failed, or kept failing after its retries. ``transient``:
    it failed as a controller that does not answer fails (worth trying again later)."""

    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Slurm:
    """Runs Slurm commands. ``retries`` extra attempts for transient failures, the pause
    starting at ``backoff`` seconds and doubling up to ``max_backoff``."""

    timeout: float = 30.0
    retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 30.0
    env: Mapping[str, str] | None = None
    log: Callable[[str], None] = field(default=_stderr, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def which(self, command: str) -> str | None:
        path = (self.env or os.environ).get("PATH", os.defpath)
        return shutil.which(command, path=path)

    def run(self, *args: str, retry: bool = True, input: str | None = None, with_stderr: bool = False) -> str:
        """stdout of ``args`` (and its stderr after it, ``with_stderr``: ``sbatch --test-only``
        answers there); SlurmError when it is missing or fails for good."""
        if self.which(args[0]) is None:
            raise SlurmError(f"`{args[0]}` is not on PATH, so this machine cannot talk to Slurm. "
                             f"Fix: {CLIENT_FIX}")
        shown = " ".join(args)
        pause = self.backoff
        attempts = 1 + (self.retries if retry else 0)
        for attempt in range(1, attempts + 1):
            try:
                proc = subprocess.run(list(args), capture_output=True, text=True, timeout=self.timeout,
                                      env=None if self.env is None else dict(self.env), input=input)
            except subprocess.TimeoutExpired:
                problem = f"timed out after {self.timeout:g} s"
            else:
                if proc.returncode == 0:
                    return proc.stdout + (proc.stderr if with_stderr else "")
                text = proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}"
                # scontrol ping frames its DOWN line with a banner of asterisks
                problem = " ".join(" ".join(ln for ln in text.splitlines() if not ln.startswith("*")).split())
            transient = any(t in problem.lower() for t in TRANSIENT)
            if not transient or attempt == attempts:
                hint = ("the controller (slurmctld) does not answer: check `scontrol ping`, wait for it "
                        "or ask the cluster's admins" if transient else "see Slurm's message")
                raise SlurmError(f"`{shown}` failed after {attempt} attempt(s): {problem}. Fix: {hint}",
                                 transient=transient)
            self.log(f"mirage: `{shown}` failed ({problem}); retry {attempt}/{attempts - 1} in {pause:g} s")
            self.sleep(pause)
            pause = min(pause * 2, self.max_backoff)
        raise AssertionError("unreachable")

    def table(self, *args: str, fields: Sequence[str], retry: bool = True) -> list[dict[str, str]]:
        """Rows of a command asked for ``|``-separated ``fields`` and no header
        (``squeue -h -o %i|%T``, ``sacct -n --parsable2 -o JobID,State``)."""
        rows = []
        for line in self.run(*args, retry=retry).splitlines():
            if not line.strip():
                continue
            values = line.split("|")
            if len(values) < len(fields):
                raise SlurmError(f"`{' '.join(args)}` printed {line!r}, not the {len(fields)} fields "
                                 f"{'|'.join(fields)}. Fix: check the Slurm version (22.05 or newer)")
            # a last field may itself contain '|' (a job name, a comment)
            rows.append(dict(zip(fields, values[: len(fields) - 1] + ["|".join(values[len(fields) - 1:])])))
        return rows


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    required: bool = True


def check_cluster(slurm: Slurm | None = None, partition: str | None = None,
                  account: str | None = None) -> list[Check]:
    """What the workflow's Slurm profile and the provisioner need, one check each: the client
    commands, a controller that answers, accounting (sacct), the partition and the account."""
    slurm = slurm or Slurm(retries=1)
    commands = ("sbatch", "squeue", "scancel", "scontrol", "sinfo")
    missing = [c for c in commands if slurm.which(c) is None]
    checks = [Check("client commands", not missing, f"{', '.join(commands)} found" if not missing else
                    f"{', '.join(missing)} not on PATH. Fix: {CLIENT_FIX}")]
    if missing:
        return checks
    try:
        ping = " ".join(slurm.run("scontrol", "ping").split())
        up = " is UP" in ping
        checks.append(Check("controller", up, ping if up else
                            f"{ping}. Fix: wait for slurmctld to come back or ask the cluster's admins"))
    except SlurmError as exc:
        checks.append(Check("controller", False, str(exc)))
        return checks
    if slurm.which("sacct") is None:
        checks.append(Check("accounting", False, "sacct is not on PATH (job history unavailable)", required=False))
    else:
        try:
            slurm.run("sacct", "-n", "-X", "-S", "now-1minutes", "-o", "JobID", retry=False)
            checks.append(Check("accounting", True, "sacct answers", required=False))
        except SlurmError as exc:
            checks.append(Check("accounting", False, f"sacct does not work ({exc}); job states come from "
                                "squeue, which forgets finished jobs after MinJobAge", required=False))
    if partition:
        names = {r["partition"].rstrip("*") for r in slurm.table("sinfo", "-h", "-o", "%P|%a", fields=("partition", "avail"))}
        checks.append(Check(f"partition {partition}", partition in names,
                            "exists" if partition in names else
                            f"not one of {', '.join(sorted(names))}. Fix: set slurm_partition in the profile"))
    if account and slurm.which("sacctmgr"):
        user = os.environ.get("USER") or _whoami()
        rows = slurm.table("sacctmgr", "-n", "-P", "show", "assoc", f"user={user}", "format=account",
                           fields=("account",), retry=False)
        accounts = {r["account"] for r in rows}
        checks.append(Check(f"account {account}", account in accounts,
                            f"user {user} may submit under it" if account in accounts else
                            f"user {user} has the account(s) {', '.join(sorted(accounts)) or 'none'}. "
                            "Fix: set slurm_account in the profile"))
    return checks


def _whoami() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def require_cluster(slurm: Slurm | None = None, partition: str | None = None,
                    account: str | None = None) -> list[Check]:
    """check_cluster, raising one SlurmError that lists every failed required check."""
    checks = check_cluster(slurm, partition=partition, account=account)
    failed = [c for c in checks if c.required and not c.ok]
    if failed:
        raise SlurmError("this Slurm cluster cannot take jobs now, nothing was submitted: "
                         + "; ".join(f"{c.name}: {c.detail}" for c in failed))
    return checks
