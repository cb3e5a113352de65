"""``mirage bench slurm-sim``: the simulator against a real slurmctld, one seeded workload job
by job. The experiment (run on Slurm, replay, compare) is mirage.live.simcheck; this command
runs it, writes its tables and reports, and draws per_job.csv with
mirage.figures.simcheck.start_scatter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from mirage import options


def _run(args, out: Path) -> dict:
    """The report of a new run on the live cluster, or (``--from-run``) of the files in ``out``."""
    from mirage.live.simcheck import WorkloadSpec, analyze, run_check
    from mirage.live.slurm import Slurm

    if args.from_run:
        return analyze(out, args.cluster_file)
    spec = WorkloadSpec(jobs=args.jobs, seed=args.seed, span_s=args.span_s,
                        max_limit_min=args.max_limit_min, max_run_s=args.max_run_s,
                        delay_s=args.delay_s)
    return run_check(spec, out, slurm=Slurm(), partition=args.partition, account=args.account,
                     user2=args.user2, qos=args.qos, qos_jobs=args.qos_jobs, qos_cpus=args.qos_cpus,
                     cluster_file=args.cluster_file)


def _draw(per_job: pd.DataFrame, interval_s: int, out: Path) -> None:
    from mirage.figures.simcheck import start_scatter
    from mirage.figures.style import save

    fig = start_scatter(per_job, interval_s)
    if fig is not None:
        png, _ = save(fig, out / "start_scatter")
        print(f"figure: {png}")


def _bench(args) -> None:
    from mirage.live.simcheck import ablation, against_run, format_ablation, format_against, format_report

    out = Path(args.out)
    rep = _run(args, out)
    per_job = pd.read_csv(out / "per_job.csv")
    ag = None
    if args.against:
        # checked (the same workload) before its starts go into the figure
        ag = against_run(out, Path(args.against))
        other = pd.read_csv(Path(args.against) / "per_job.csv").set_index("key")["real_start_s"]
        per_job["again_start_s"] = per_job["key"].map(other)
    _draw(per_job, rep["jobs"].get("interval_s", 5), out)
    print(format_report(rep))
    print(f"report: {out / 'report.json'}; per job: {out / 'per_job.csv'}")
    if args.ablation:
        rows = ablation(out)
        (out / "ablation.json").write_text(json.dumps(rows, indent=1))
        print(format_ablation(rows))
    if ag is not None:
        (out / "against.json").write_text(json.dumps(ag, indent=1))
        print(format_against(ag))
    if args.json:
        print(json.dumps({k: rep[k] for k in ("jobs", "probes")}))


def register_bench(bench_subparsers) -> None:
    """Add ``mirage bench slurm-sim``."""
    b = bench_subparsers.add_parser(
        "slurm-sim", help="the simulator against a live slurmctld: one seeded workload, job by job")
    b.add_argument("--out", required=True, help="directory for cluster.yaml, sacct.txt, per_job.csv, "
                   "report.json, start_scatter.png")
    b.add_argument("--jobs", type=int, default=200)
    options.add_seed(b)
    b.add_argument("--span-s", type=int, default=1200, help="submissions spread over this many seconds")
    b.add_argument("--max-limit-min", type=int, default=15)
    b.add_argument("--max-run-s", type=int, default=75)
    b.add_argument("--delay-s", type=int, default=180,
                   help="holds are released and --begin times fall up to this long after the submit")
    b.add_argument("--partition", default="gpu")
    b.add_argument("--account", default="mirage")
    b.add_argument("--user2", default="mirage-bg", help="the second user (submitted with sbatch --uid)")
    b.add_argument("--qos", help="an existing QOS to run under (default: a temporary one with "
                   "--qos-jobs and --qos-cpus per user, removed at the end)")
    b.add_argument("--qos-jobs", type=int, default=4)
    b.add_argument("--qos-cpus", type=int, default=12)
    b.add_argument("--cluster-file", help="replay with this description instead of the derived one")
    b.add_argument("--from-run", action="store_true",
                   help="no Slurm: compare again from the files a finished run left in --out")
    b.add_argument("--ablation", action="store_true",
                   help="also replay with the description as first derived and after each change the "
                   "comparison made (ablation.json)")
    b.add_argument("--against", metavar="RUN",
                   help="also compare this run's real starts with another run of the same workload "
                   "(its --out directory): Slurm against itself, the floor under the replay's error "
                   "(against.json)")
    b.add_argument("--json", action="store_true", help="also print the two metric blocks as JSON")
    b.set_defaults(func=_bench)
