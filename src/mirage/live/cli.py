"""`mirage slurm check`: can this machine submit to a working Slurm?"""

from __future__ import annotations


def _check(args) -> None:
    from mirage.live.slurm import Slurm, SlurmError, check_cluster

    checks = check_cluster(Slurm(retries=args.retries), partition=args.partition, account=args.account)
    for c in checks:
        mark = "ok  " if c.ok else ("FAIL" if c.required else "warn")
        print(f"{mark} {c.name}: {c.detail}")
    failed = [c.name for c in checks if c.required and not c.ok]
    if failed:
        raise SlurmError(f"Slurm is not usable from here ({', '.join(failed)}); see the lines above")


def register(sub) -> None:
    p = sub.add_parser("slurm", help="the live Slurm cluster")
    ssub = p.add_subparsers(dest="slurm_command", required=True)
    c = ssub.add_parser("check", help="client commands, controller, accounting, partition, account")
    c.add_argument("--partition", help="a partition the jobs will go to")
    c.add_argument("--account", help="an account the jobs will be charged to")
    c.add_argument("--retries", type=int, default=1, help="retries for a controller that does not answer")
    c.set_defaults(func=_check)
