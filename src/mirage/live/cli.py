"""`mirage slurm check` (can this machine submit to a working Slurm?) and `mirage provision`
(run, status, stop: keep a chained service running)."""

from __future__ import annotations

from mirage.units import HOUR_S


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


def _duration_s(text: str) -> float:
    """``30s``, ``10m``, ``2h`` or plain seconds."""
    import re

    from mirage.live.provision import ProvisionError

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise ProvisionError(f"--interval {text!r} is not a duration. Fix: give e.g. 30s, 10m or 1h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": HOUR_S}[m.group(2)]


def _limit_min(text: str) -> int:
    import pandas as pd

    from mirage.live.provision import ProvisionError
    from mirage.traces.fields import parse_limit_minutes

    minutes, bad = parse_limit_minutes(pd.Series([text]))
    if bad.iloc[0] or pd.isna(minutes.iloc[0]):
        raise ProvisionError(f"--time {text!r} is not a Slurm time limit. Fix: minutes or [D-]HH:MM:SS, "
                             "e.g. 2880 or 2-00:00:00")
    return int(minutes.iloc[0])


def _params(items) -> dict:
    import yaml

    out = {}
    for item in items or []:
        key, _, value = item.partition("=")
        out[key] = yaml.safe_load(value)
    return out


def _provision_run(args) -> None:
    import json
    from pathlib import Path

    from mirage.live.provision import ChainSpec, ProvisionError, Provisioner, load_policy_spec

    script = Path(args.script)
    if not script.is_file():
        raise ProvisionError(f"the job script {script} does not exist. Fix: pass the service's batch script")
    spec = ChainSpec(script=str(script.resolve()), links=args.links, nodes=args.nodes,
                     time_min=_limit_min(args.time), policy=args.policy, partition=args.partition,
                     account=args.account, unit=args.unit, time_scale=args.time_scale,
                     on_failure=args.on_failure, sbatch_args=list(args.sbatch_arg or []))
    if args.policy == "twin":  # fitted here from the cluster's trace; simulates the live queue
        from mirage.twin.live import load_twin

        policy = load_twin(_params(args.policy_param))
    else:
        policy = load_policy_spec(args.policy, _params(args.policy_param))
    prov = Provisioner(spec, args.state_dir, policy, interval_s=_duration_s(args.interval), log=print)
    if args.dry_run:
        prov.dir.lock()
        try:
            state = prov.dir.load()
            prov.state = state or {"chain_id": "dry-run", "links": [], "handovers": [], "done": False,
                                   "stopped": None, "created": 0}
            observer = prov.observer()
            print(f"dry run, nothing submitted; the next step: {prov.act(observer, dry_run=True)}")
        finally:
            prov.dir.unlock()
        return
    result = prov.run()
    print(json.dumps(result, indent=1))
    if result["state"] != "done":
        raise ProvisionError(f"chain {result['chain_id']} did not finish: {result['state']}. Fix: see "
                             f"{args.state_dir}/provision.log; run the same command again to go on")


def _provision_status(args) -> None:
    import datetime as dt

    from mirage.live.provision import status

    info = status(args.state_dir)
    state = info["state"]

    def when(t):
        return "-" if t is None else dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%m-%d %H:%M:%S")

    spec = state["spec"]
    print(f"chain {state['chain_id']}: {spec['links']} links x {spec['nodes']} {spec['unit']} x "
          f"{spec['time_min']} min, policy {spec['policy']}"
          + (" (done)" if state["done"] else f" (stopped: {state['stopped']})" if state["stopped"] else ""))
    print(f"{'link':>4} {'job':>8} {'state':<10} {'submitted':<15} {'started':<15} {'ended':<15} reason")
    for r in state["links"]:
        print(f"{r['link']:>4} {r['job_id'] or '-':>8} {r['state'] or 'intent':<10} {when(r['submitted']):<15} "
              f"{when(r['start']):<15} {when(r['end']):<15} {r['reason']}")
    for h in info["handovers"]:
        print(f"handover {h['link'] - 1}->{h['link']}: interruption {h['interruption_s']} s, "
              f"overlap {h['overlap_s']} s")
    s = info["summary"]
    if s["handovers"]:
        print(f"mean interruption {s['mean_interruption_h'] * 3600:.0f} s, overlap "
              f"{s['overlap_node_hours']:.3f} node-hours, zero-interruption share "
              f"{s['zero_interruption_share']:.2f} over {s['handovers']} handovers")


def _provision_stop(args) -> None:
    from mirage.live.provision import stop

    ids = stop(args.state_dir, cancel=args.cancel)
    print(f"{args.state_dir}: the provisioner stops at its next step"
          + (f"; cancelled the chain's jobs {' '.join(ids)}" if ids else ""))


def register_provision(sub) -> None:
    p = sub.add_parser("provision", help="keep a chained service running on a live Slurm")
    psub = p.add_subparsers(dest="provision_command", required=True)
    r = psub.add_parser("run", help="submit a chain of links, each successor when the policy says so")
    r.add_argument("script", help="the service's batch script (its #SBATCH lines are honoured)")
    r.add_argument("--links", type=int, required=True, help="links to run")
    r.add_argument("--nodes", type=int, required=True, help="nodes per link (CPUs with --unit cpus)")
    r.add_argument("--time", required=True, help="each link's limit: minutes or [D-]HH:MM:SS")
    r.add_argument("--policy", required=True,
                   help="a fitted policy dir (results/C/M/models/nK/POLICY), reactive|average|fixed_lead|plan_lead, "
                        "or twin (with --policy-param trace=TRACE --policy-param cluster=NAME|FILE.yaml)")
    r.add_argument("--policy-param", action="append", metavar="KEY=VALUE", help="e.g. lead_h=2 for fixed_lead")
    r.add_argument("--state-dir", required=True, help="the chain's state, log and handovers.jsonl")
    r.add_argument("--interval", default="10m", help="decision interval (30s, 10m, ...; default 10m)")
    r.add_argument("--time-scale", type=float, default=1.0,
                   help="policy seconds per real second (a time-compressed test chain; default 1)")
    r.add_argument("--partition")
    r.add_argument("--account")
    r.add_argument("--unit", choices=["nodes", "cpus"], default="nodes",
                   help="what --nodes and the cluster's sizes count (cpus: a one-machine cluster)")
    r.add_argument("--on-failure", choices=["continue", "stop"], default="continue",
                   help="when a link fails or is cancelled: submit the next one (default) or stop")
    r.add_argument("--sbatch-arg", action="append", metavar="ARG", help="one more sbatch option, e.g. --qos=high")
    r.add_argument("--dry-run", action="store_true", help="say what it would do now; submit nothing")
    r.set_defaults(func=_provision_run)
    s = psub.add_parser("status", help="the chain: links, job ids, states, each handover")
    s.add_argument("--state-dir", required=True)
    s.set_defaults(func=_provision_status)
    t = psub.add_parser("stop", help="stop provisioning (cancels nothing it did not submit)")
    t.add_argument("--state-dir", required=True)
    t.add_argument("--cancel", action="store_true", help="also cancel the chain's unfinished jobs")
    t.set_defaults(func=_provision_stop)
