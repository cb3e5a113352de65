"""Command line of the simulator: ``mirage sim fidelity|replay|whatif|synth|calibrate``.

``register(subparsers)`` is wired into ``mirage.cli`` (``mirage bench sim``: mirage.bench.sim);
each command stores its handler in ``func``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mirage import options
from mirage.errors import MirageError
from mirage.units import HOUR_S


def _cluster(args):
    from .cluster import compat_cluster, load_cluster

    if getattr(args, "compat", False):
        return compat_cluster(args.cluster)
    return load_cluster(args.cluster, getattr(args, "cluster_file", None))


def _fidelity(args) -> None:
    import pandas as pd

    from .fidelity import default_periods, fidelity_report, write_report
    from .io import load_table

    table = load_table(args.trace, args.cluster)
    prof = _cluster(args)
    starts = tuple(s for s in args.windows.split(",") if s) if args.windows else ()
    periods = default_periods(table, window_days=args.window_days, starts=starts)
    points = [] if args.points else None
    report = fidelity_report(table, prof, periods, variants=args.variants, points=points,
                             loo_jobs=args.loo_jobs, seed=args.seed)
    report["trace"] = str(args.trace)
    report["command"] = (f"mirage sim fidelity {args.trace} --cluster {args.cluster} "
                         f"--out {args.out}")
    write_report(report, args.out)
    if args.points:
        Path(args.points).parent.mkdir(parents=True, exist_ok=True)
        pd.concat(points, ignore_index=True).to_parquet(args.points, index=False)
    for per in report["periods"]:
        n, k = per["period"]["long_jobs"], per["period"]["loo_jobs"]
        print(per["period"]["name"], f"({n} jobs >= 24 h" + (f", leave-one-out on {k}" if k < n else "") + "):")
        for m in ("loo_mae_h", "loo_median_h", "loo_within_1h", "replay_corr", "replay_mape"):
            vals = "  ".join(f"{k}={_fmt(v)}" for k, v in per[m].items())
            print(f"  {m:14s} {vals}")
    for name, per in report.get("variants", {}).items():
        print(f"variant {name}:")
        for pname, vals in per.items():
            print(f"  {pname[:24]:24s} " + "  ".join(f"{k}={_fmt(v)}" for k, v in vals.items()))
    print(f"report -> {args.out}" + (f"; leave-one-out points -> {args.points}" if args.points else ""))


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _replay(args) -> None:
    import numpy as np
    import pandas as pd

    from .io import load_table
    from .jobs import to_seconds
    from .warmstart import warm_start

    table = load_table(args.trace, args.cluster)
    prof = _cluster(args)
    t0 = to_seconds(args.start) if args.start else None
    sim = warm_start(table, prof, t0, record=True, pinned=False)
    sim.run_until(to_seconds(args.end) if args.end else 1 << 62)
    st = sim.trace_start
    out = pd.DataFrame({
        "job_id": table.job_id.astype(str),
        "submit": table.submit.astype("datetime64[s]"),
        "real_start": table.start.astype("datetime64[s]"),
        "sim_start": np.where(st >= 0, st, np.iinfo(np.int64).min).astype("datetime64[s]"),
    })
    out.loc[st < 0, "sim_start"] = pd.NaT
    if t0 is not None:
        out = out[table.submit >= t0]
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    out.to_parquet(path, index=False) if path.suffix == ".parquet" else out.to_csv(path, index=False)
    done = out["sim_start"].notna()
    wait_sim = (out["sim_start"] - out["submit"])[done].dt.total_seconds().mean() / HOUR_S
    wait_real = (out["real_start"] - out["submit"]).dt.total_seconds().mean() / HOUR_S
    print(f"{len(out)} jobs replayed ({int(done.sum())} started): mean wait simulated "
          f"{wait_sim:.2f} h, real {wait_real:.2f} h -> {path}")


def _whatif(args) -> None:
    from .io import load_table
    from .jobs import to_seconds, to_timestamp
    from .warmstart import warm_start
    from .whatif import what_if

    table = load_table(args.trace, args.cluster)
    prof = _cluster(args)
    t = to_seconds(args.at)
    t0 = to_seconds(args.from_) if args.from_ else t
    if t0 > t:
        raise MirageError(f"--from {args.from_} is after --at {args.at}. Fix: warm start at or before")
    sim = warm_start(table, prof, t0, record=False)
    sim.run_until(t)
    start = what_if(sim, t, args.nodes, args.limit_min, args.user)
    if start is None:
        print(f"a {args.nodes}-node job of {args.limit_min} min submitted at {to_timestamp(t)} "
              "does not start within 30 days")
    else:
        print(f"a {args.nodes}-node job of {args.limit_min} min submitted at {to_timestamp(t)} "
              f"starts at {to_timestamp(start)} (wait {(start - t) / 3600:.2f} h)")


def _common(p: argparse.ArgumentParser, trace_positional: bool = True) -> None:
    if trace_positional:
        p.add_argument("trace", help="raw trace file or clean .parquet table")
    p.add_argument("--cluster", required=True, help="cluster key; its description config/clusters/<cluster>.yaml")
    p.add_argument("--cluster-file", help="cluster description YAML to use instead of config/clusters/<cluster>.yaml")
    p.add_argument("--compat", action="store_true",
                   help="the reference simulator's setting (88 nodes, cold start, age+size priority)")


def _synth(args) -> None:
    import yaml

    from mirage.traces.write import NOT_IN_LAYOUT, write_tacc

    from .synth import synthesize

    params = yaml.safe_load(Path(args.params).read_text()) if args.params else None
    if args.params_json:
        params = {**(params or {}), **json.loads(args.params_json)}
    try:
        jobs, description = synthesize(args.cluster, start=args.start, days=args.days,
                                       seed=args.seed, params=params, with_description=True)
    except ValueError as e:
        raise MirageError(str(e)) from None
    if args.description_out:
        from .calibrate import write_description

        write_description(description, args.description_out, header=(
            f"The scheduler of the synthetic {args.cluster} trace {args.out} (mirage sim synth, "
            f"seed {args.seed}): read by the calibrated mode with `description: generator`"))
    out = Path(args.out)
    if out.suffix == ".parquet":
        out.parent.mkdir(parents=True, exist_ok=True)
        jobs.to_parquet(out, index=False)
    else:
        # the layout of the real logs, which record no dependencies either: the calibrated
        # mode infers the chains from the text, as it does for a real trace
        dropped = write_tacc(jobs, out, dropping=NOT_IN_LAYOUT)
        if dropped:
            print(f"note: {out} is TACC text, which has no field for "
                  + ", ".join(f"{c} ({n} jobs)" for c, n in dropped.items())
                  + ": not written (a real ls6 log records none either). Fix, to keep them: "
                  "--out FILE.parquet")
    print(f"synthetic {args.cluster}: {len(jobs)} jobs over {args.days} days (seed {args.seed}) -> {out}")


def _calibrate(args) -> None:
    from .calibrate import calibrate, validation_report, write_description
    from .io import load_table

    table = load_table(args.trace, args.cluster)
    fitted, report = calibrate(table, args.cluster, *args.train_window, loo_jobs=args.loo_jobs,
                               seed=args.seed, criterion=args.criterion, pairs=args.pairs)
    write_description(fitted, args.out, header=(
        f"{args.cluster}: fitted by `mirage sim calibrate` from {args.trace}, training window "
        f"{args.train_window[0]} .. {args.train_window[1]} ({report['seconds']} s). Every value: "
        "{value, source}. Read by mirage.sim.cluster.load_cluster (--cluster-file)."))
    if args.validation_window:
        hand = None
        if args.compare_hand:
            from .cluster import load_cluster

            hand = load_cluster(args.cluster, args.cluster_file)
        report["validation"] = validation_report(table, fitted, *args.validation_window, hand=hand)
        per = report["validation"]["period"]
        print(f"validation {args.validation_window[0]} .. {args.validation_window[1]} "
              f"({per['long_jobs']} jobs with a limit >= {per['long_limit_h']:g} h):")
        for name, vals in report["validation"]["predictors"].items():
            print(f"  {name:10s} " + "  ".join(f"{k}={_fmt(v)}" for k, v in vals.items()))
        if "fitted_vs_hand" in report["validation"]:
            print("  fitted - hand (paired 95 % bootstrap): " + "; ".join(
                f"{k} {d['diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] {d['verdict']}"
                for k, d in report["validation"]["fitted_vs_hand"].items()))
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"description -> {args.out}" + (f"; report -> {args.report}" if args.report else ""))


def register(subparsers) -> None:
    """Add ``mirage sim ...`` to the main parser's subparsers."""
    sim = subparsers.add_parser("sim", help="the event-driven Slurm simulator")
    sub = sim.add_subparsers(dest="sim_command", required=True)

    f = sub.add_parser("fidelity", help="measure how well the simulator reproduces a real trace")
    _common(f)
    f.add_argument("--out", required=True, help="report JSON (figures: mirage figures fidelity)")
    f.add_argument("--points", help="also write every period's leave-one-out jobs, real and "
                                    "predicted starts, to this .parquet")
    f.add_argument("--window-days", type=float, default=5.0, help="length of each window (days)")
    f.add_argument("--windows", default="2022-11-01,2023-03-01",
                   help="comma-separated window starts; the whole trace is always added")
    f.add_argument("--loo-jobs", type=int, default=None,
                   help="score the whole trace's leave-one-out on a seeded sample of at most this "
                        "many long jobs (the windows score all of theirs; default: every job)")
    options.add_seed(f, "seed of the --loo-jobs sample")
    f.add_argument("--variants", action="store_true",
                   help="also evaluate named changes of the cluster description on the windows (ablation)")
    f.set_defaults(func=_fidelity)

    r = sub.add_parser("replay", help="replay a trace; write simulated vs real starts")
    _common(r)
    r.add_argument("--out", required=True, help=".parquet or .csv")
    r.add_argument("--start", help="warm start time (default: first submit)")
    r.add_argument("--end", help="stop time (default: until every job started)")
    r.set_defaults(func=_replay)

    w = sub.add_parser("whatif", help="when would a job submitted at a time start?")
    _common(w)
    w.add_argument("--at", required=True, help="submit time, e.g. 2023-03-02T12:00:00")
    w.add_argument("--from", dest="from_", help="warm start time (default: --at)")
    w.add_argument("--nodes", type=int, default=1)
    w.add_argument("--limit-min", type=int, default=2880)
    w.add_argument("--user", help="user name from the trace (default: a service user of its own)")
    w.set_defaults(func=_whatif)

    k = sub.add_parser("calibrate", help="fit a cluster description from a trace's training window")
    k.add_argument("trace", help="raw trace (any supported format) or clean .parquet table")
    k.add_argument("--cluster", required=True, help="cluster name written into the description")
    k.add_argument("--train-window", nargs=2, metavar=("START", "END"), required=True,
                   help="only jobs submitted before END are read; leave-one-out jobs from [START, END)")
    k.add_argument("--out", required=True, help="the fitted description (.yaml)")
    k.add_argument("--validation-window", nargs=2, metavar=("START", "END"),
                   help="also measure the fitted description there beside compat and zero-wait")
    k.add_argument("--compare-hand", action="store_true",
                   help="and beside the hand-written description (config/clusters/<cluster>.yaml "
                        "or --cluster-file), with the fitted minus the hand-written figures and "
                        "their paired 95 %% bootstrap intervals")
    k.add_argument("--cluster-file", help="the hand-written description to compare with")
    k.add_argument("--report", help="JSON: every candidate's training error, the validation figures")
    k.add_argument("--loo-jobs", type=int, default=200, help="leave-one-out jobs per candidate")
    options.add_seed(k, "seed of the leave-one-out sample")
    k.add_argument("--criterion", choices=["mae", "mae+median", "mae+median+replay"],
                   default="mae+median",
                   help="how candidates are compared: the leave-one-out MAE, or MAE and median "
                        "each relative to zero-wait's, summed (+replay: plus the training "
                        "window's replay MAPE)")
    k.add_argument("--pairs", action="store_true",
                   help="then sweep pairs of changes to two values, for values that only help "
                        "together (150-300 more leave-one-out passes)")
    k.set_defaults(func=_calibrate)

    y = sub.add_parser("synth", help="a calibrated synthetic trace: seeded demand, started by "
                                     "this simulator (FIFO + EASY, per-user limit)")
    y.add_argument("cluster", choices=["ls6", "frontera", "longhorn"])
    options.add_seed(y, required=True)
    y.add_argument("--start", default="2022-11-01")
    y.add_argument("--days", type=float, default=60)
    y.add_argument("--params", help="YAML file overriding calibration parameters")
    y.add_argument("--params-json", help="overrides as one JSON mapping (what the workflow "
                   "passes from clusters.<cluster>.synthetic.params); over --params")
    y.add_argument("--out", required=True,
                   help=".log (TACC text, as the real logs: no dependency field, the chains are "
                        "left out with a note) or .parquet (canonical: every column)")
    y.add_argument("--description-out", help="also write the simulator's description of the "
                   "trace's own scheduler here (.yaml; `description: generator` reads it)")
    y.set_defaults(func=_synth)


def main(argv=None) -> int:
    """Stand-alone entry (``python -m mirage.sim.cli``) for use before the main CLI wires it."""
    import sys

    p = argparse.ArgumentParser(prog="mirage")
    sub = p.add_subparsers(dest="command", required=True)
    register(sub)
    args = p.parse_args(argv)
    try:
        args.func(args)
    except MirageError as e:
        print(f"mirage: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
