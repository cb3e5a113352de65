"""``mirage bench slurm-sim``: the simulator against a real slurmctld (mirage.live.simcheck), and
its figure: simulated vs real start of every job, and of every leave-one-out what-if probe.

The command lives here, not in mirage.live, because it draws: only ``figures`` imports
matplotlib, and ``live`` may not import ``figures`` (tests/test_imports.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

#: the views' names in the distribution panel
SHORT = {"sim_start_s": "replay", "whatif_start_s": "what-if probes", "resync_start_s": "from each submit",
         "step_start_s": "the last minute", "again_start_s": "Slurm against itself"}


def start_scatter(per_job: pd.DataFrame, interval_s: int):
    """In the house style (``style.styled``; imported here so that building the command line
    loads no matplotlib). Simulated vs real start, minutes from the first submit, the band one
    scheduling interval either side: every job in one replay from the first submit; the what-if
    probes (left out, inserted at their submit into a warm start from the recorded state); every
    job simulated from the recorded state at its submit; and from the recorded state 60 s before
    its real start. With an ``again_start_s`` column (a second run of the same workload on
    Slurm), that run's starts against the first's, and every view's error distribution beside
    Slurm's own run-to-run difference."""
    from mirage.figures.style import styled

    return styled(_start_scatter)(per_job, interval_s)


def _start_scatter(per_job: pd.DataFrame, interval_s: int):
    import matplotlib.pyplot as plt

    from mirage.figures.style import DOUBLE_W, ROLE_COLORS

    if per_job.empty:
        return None
    again = "again_start_s" in per_job and per_job["again_start_s"].notna().any()
    fig, axes = plt.subplots(2, 3 if again else 2, figsize=(DOUBLE_W * (1.4 if again else 1), 5.6),
                             layout="constrained")

    def some(col):
        return per_job[per_job[col].notna()] if col in per_job else per_job[:0]

    panels = [("replay from the first submit", "sim_start_s", per_job),
              ("what-if probes (left out, inserted at their submit)", "whatif_start_s", some("whatif_start_s")),
              ("each job from the recorded state at its submit", "resync_start_s", some("resync_start_s")),
              ("the last minute: from the recorded state\n60 s before each job's start", "step_start_s",
               some("step_start_s"))]
    if again:
        panels.append(("Slurm against itself: the same workload\nrun again on the same cluster",
                       "again_start_s", some("again_start_s")))
    kinds = {"plain": "o", "held": "s", "begin": "^", "dep": "D", "probe": "*"}
    for ax, (title, col, d) in zip(axes.flat, panels):
        d = d[d[col] >= 0]
        if d.empty:
            ax.set_axis_off()
            continue
        real = d["real_start_s"].to_numpy() / 60
        sim = d[col].to_numpy() / 60
        lo, hi = 0.0, float(max(real.max(), sim.max())) * 1.02 + 0.1
        xs = np.array([lo, hi])
        ax.fill_between(xs, xs - interval_s / 60, xs + interval_s / 60, color="0.85", lw=0,
                        label=f"within {interval_s} s")
        ax.plot(xs, xs, color=ROLE_COLORS["real"], lw=0.6)
        for kind, marker in kinds.items():
            k = d["kind"].to_numpy() == kind
            if k.any():
                ax.scatter(real[k], sim[k], s=10 if marker != "*" else 24, marker=marker, lw=0.3,
                           color=ROLE_COLORS["compat"] if col == "whatif_start_s" else ROLE_COLORS["sim"],
                           alpha=0.75, edgecolor="white", label=kind)
        err = np.abs(d[col] - d["real_start_s"])
        ax.set_title(f"{title}\n{(err <= interval_s).mean():.0%} within {interval_s} s, "
                     f"MAE {err.mean():.0f} s", fontsize=6.5)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("real start (min)")
        ax.set_ylabel("the other run's start (min)" if col == "again_start_s" else "simulated start (min)")
        ax.legend(fontsize=6, loc="upper left", frameon=False)
    if again:
        # every view's |start difference| as a distribution, beside Slurm's own run to run
        ax = axes.flat[5]
        for title, col, d in panels:
            d = d[d[col] >= 0]
            err = np.sort(np.abs(d[col] - d["real_start_s"]).to_numpy()) + 1
            ax.step(err, np.arange(1, len(err) + 1) / len(err), where="post", lw=1.0,
                    color="black" if col == "again_start_s" else None,
                    label=SHORT[col])
        ax.axvline(interval_s + 1, color="0.6", lw=0.6, ls="--")
        ax.set_xscale("log")
        ax.set_xlabel("|start difference| + 1 (s)")
        ax.set_ylabel("share of jobs")
        ax.set_title("how far each view is from Slurm's start", fontsize=6.5)
        ax.legend(fontsize=5.5, loc="lower right", frameon=False)
    return fig


def _bench(args) -> None:
    from mirage.live.simcheck import WorkloadSpec, analyze, format_report, run_check
    from mirage.figures.style import save
    from mirage.live.slurm import Slurm

    out = Path(args.out)
    if args.from_run:
        rep = analyze(out, args.cluster_file)
    else:
        spec = WorkloadSpec(jobs=args.jobs, seed=args.seed, span_s=args.span_s,
                            max_limit_min=args.max_limit_min, max_run_s=args.max_run_s,
                            delay_s=args.delay_s)
        rep = run_check(spec, out, slurm=Slurm(), partition=args.partition, account=args.account,
                        user2=args.user2, qos=args.qos, qos_jobs=args.qos_jobs, qos_cpus=args.qos_cpus,
                        cluster_file=args.cluster_file)
    per_job = pd.read_csv(out / "per_job.csv")
    ag = None
    if args.against:
        from mirage.live.simcheck import against_run

        # checked (the same workload) before its starts go into the figure
        ag = against_run(out, Path(args.against))
        other = pd.read_csv(Path(args.against) / "per_job.csv").set_index("key")["real_start_s"]
        per_job["again_start_s"] = per_job["key"].map(other)
    fig = start_scatter(per_job, rep["jobs"].get("interval_s", 5))
    if fig is not None:
        png, _ = save(fig, out / "start_scatter")
        print(f"figure: {png}")
    print(format_report(rep))
    print(f"report: {out / 'report.json'}; per job: {out / 'per_job.csv'}")
    if args.ablation:
        from mirage.live.simcheck import ablation, format_ablation

        rows = ablation(out)
        (out / "ablation.json").write_text(json.dumps(rows, indent=1))
        print(format_ablation(rows))
    if ag is not None:
        from mirage.live.simcheck import format_against

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
    b.add_argument("--seed", type=int, default=0)
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
