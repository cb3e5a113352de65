"""The ``mirage`` command line: one subcommand per pipeline step, called by the workflow rules.

Bad input ends with one line ``mirage: error: ...`` naming the problem and the fix, and exit
status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mirage.errors import MirageError


def _trace_clean(args) -> None:
    from mirage.traces.clean import clean_trace, write_outputs

    kept, quarantine, report = clean_trace(
        args.input, cluster=args.cluster, fmt=args.format, procs_per_node=args.procs_per_node,
        fill_limit_min=args.fill_limit_min,
    )
    qpath = write_outputs(kept, quarantine, report, args.out, args.report, args.quarantine)
    q = sum(report["quarantined"].values())
    print(
        f"{args.input}: {report['rows_in']} rows in, {report['rows_kept']} kept, {q} quarantined "
        f"({', '.join(f'{k}={v}' for k, v in report['quarantined'].items()) or 'none'}) -> "
        f"{args.out}; side file {qpath}"
    )


def _trace_detect(args) -> None:
    from mirage.traces.read import detect_format

    print(detect_format(args.input))


def _trace_synth(args) -> None:
    from mirage.traces.synth import synthesize
    from mirage.traces.write import write_tacc

    params = None
    if args.params:
        import yaml

        params = yaml.safe_load(Path(args.params).read_text())
    jobs = synthesize(args.cluster, start=args.start, days=args.days, seed=args.seed, params=params)
    out = Path(args.out)
    if out.suffix == ".parquet":
        out.parent.mkdir(parents=True, exist_ok=True)
        jobs.to_parquet(out, index=False)
    else:
        write_tacc(jobs, out)
    print(f"synthetic {args.cluster}: {len(jobs)} jobs over {args.days} days (seed {args.seed}) -> {out}")


def _trace_split(args) -> None:
    import pandas as pd

    from mirage.traces.split import check_coverage, split_window

    jobs = pd.read_parquet(args.input)
    for name, start, end, out in (
        ("train", args.train_start, args.train_end, args.train_out),
        ("validation", args.validation_start, args.validation_end, args.validation_out),
    ):
        check_coverage(jobs, start, end, name)
        part = split_window(jobs, start, end, history_hours=args.history_hours, horizon_hours=args.horizon_hours)
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        part.to_parquet(out, index=False)
        print(f"{name} {start}..{end}: {int(part['in_window'].sum())} jobs in window, {len(part)} with context -> {out}")


def _trace_profile(args) -> None:
    import pandas as pd

    from mirage.traces.profile import compare_profiles, trace_profile

    jobs = pd.read_parquet(args.input)
    reference = pd.read_parquet(args.reference) if args.reference else None
    profile = {"trace": trace_profile(jobs)}
    if reference is not None:
        profile["reference"] = trace_profile(reference)
        profile["difference"] = compare_profiles(profile["trace"], profile["reference"])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(profile, indent=2, default=float) + "\n")
    p = profile["trace"]
    print(f"{args.input}: {p['jobs']} jobs, {p['jobs_per_day']:.1f}/day, mean busy nodes "
          f"{p['busy_nodes_mean']:.1f}, {p['wait_over_1h_share']:.1%} wait > 1 h -> {args.out}")


def _config_write(args) -> None:
    import yaml

    config = json.loads(args.json)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    header = "".join(f"# from {f}\n" for f in args.source)
    Path(args.out).write_text("# The configuration this run used (defaults merged).\n" + header
                              + yaml.safe_dump(config, sort_keys=False))
    print(f"configuration -> {args.out}")


def _trace_fetch(args) -> None:
    from mirage.traces.fetch import fetch

    info = fetch(args.cluster, args.out, timeout=args.timeout)
    print(json.dumps(info, indent=2))


def _config_validate(args) -> None:
    import yaml

    from mirage.config import DEFAULTS, layered, load_schema, validate

    schema = Path(args.schema) if args.schema else Path(args.config).with_name("schema.yaml")
    defaults = None if args.no_defaults else (Path(args.defaults) if args.defaults else DEFAULTS)
    try:
        config = layered(args.config, defaults)
    except (OSError, yaml.YAMLError) as exc:
        raise MirageError(f"cannot read config {args.config}: {exc}") from None
    validate(config, load_schema(schema), source=args.config)
    print(f"{args.config}: valid" + (f" (over {defaults})" if defaults else ""))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mirage", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    trace = sub.add_parser("trace", help="read, clean, synthesize, split and fetch job traces")
    tsub = trace.add_subparsers(dest="trace_command", required=True)

    p = tsub.add_parser("clean", help="read any supported trace and clean it losslessly")
    p.add_argument("input")
    p.add_argument("--cluster", required=True, help="cluster key written into every row")
    p.add_argument("--out", required=True, help="clean canonical table (.parquet)")
    p.add_argument("--report", required=True, help="JSON report: rows_in, rows_kept, quarantined")
    p.add_argument("--quarantine", help="side file of refused rows (default: OUT stem + .quarantine.csv)")
    p.add_argument("--format", default="auto", choices=["auto", "tacc", "sacct", "swf", "parquet"])
    p.add_argument("--procs-per-node", type=int, help="SWF only: processors per node")
    p.add_argument("--fill-limit-min", type=int, help="limit for unlimited jobs (default: trace max)")
    p.set_defaults(func=_trace_clean)

    p = tsub.add_parser("detect", help="print the detected format of a trace file")
    p.add_argument("input")
    p.set_defaults(func=_trace_detect)

    p = tsub.add_parser("synth", help="generate a calibrated synthetic trace")
    p.add_argument("cluster", choices=["ls6", "frontera", "longhorn"])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--start", default="2022-11-01")
    p.add_argument("--days", type=float, default=60)
    p.add_argument("--params", help="YAML file overriding calibration parameters")
    p.add_argument("--out", required=True, help=".log (TACC text) or .parquet (canonical)")
    p.set_defaults(func=_trace_synth)

    p = tsub.add_parser("split", help="cut a clean trace into training and validation windows")
    p.add_argument("input")
    for name in ("train", "validation"):
        p.add_argument(f"--{name}-start", required=True)
        p.add_argument(f"--{name}-end", required=True)
        p.add_argument(f"--{name}-out", required=True)
    p.add_argument("--history-hours", type=float, required=True)
    p.add_argument("--horizon-hours", type=float, required=True)
    p.set_defaults(func=_trace_split)

    p = tsub.add_parser("profile", help="statistics of a clean trace (JSON; figures: mirage figures trace)")
    p.add_argument("input", help="clean canonical table (.parquet)")
    p.add_argument("--out", required=True, help="profile JSON")
    p.add_argument("--reference", help="another clean table to compare with (e.g. the real trace)")
    p.set_defaults(func=_trace_profile)

    p = tsub.add_parser("fetch", help="download a published trace (needs network)")
    p.add_argument("cluster")
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=60.0)
    p.set_defaults(func=_trace_fetch)

    cfg = sub.add_parser("config", help="check a workflow config")
    csub = cfg.add_subparsers(dest="config_command", required=True)
    p = csub.add_parser("validate", help="validate a config against its schema")
    p.add_argument("config")
    p.add_argument("--schema", help="default: schema.yaml beside the config")
    p.add_argument("--defaults", help="the defaults the config layers on (default: "
                   "config/defaults.yaml of this checkout)")
    p.add_argument("--no-defaults", action="store_true", help="validate the file on its own")
    p.set_defaults(func=_config_validate)
    p = csub.add_parser("write", help="write a run's merged configuration (JSON) as YAML")
    p.add_argument("--json", required=True)
    p.add_argument("--source", nargs="*", default=[], help="the config files it came from")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_config_write)

    bench = sub.add_parser("bench", help="benchmarks that print figures")
    bsub = bench.add_subparsers(dest="bench_command", required=True)
    _register_stages(sub, bsub)
    return parser


def _register_stages(sub, bsub) -> None:
    """The later stages register their own commands (imports stay light: no torch here)."""
    from mirage import benchmarks, notebooks, report
    from mirage.evaluate import claims, expected
    from mirage.evaluate import cli as evaluate_cli
    from mirage.figures import cli as figures_cli
    from mirage.live import cli as live_cli
    from mirage.policies import cli as policies_cli
    from mirage.samples import bench as samples_bench
    from mirage.samples import cli as samples_cli
    from mirage.sim import cli as sim_cli

    sim_cli.register(sub)
    sim_cli.register_bench(bsub)
    samples_cli.register(sub)
    samples_bench.register_bench(bsub)
    benchmarks.register_bench(bsub)
    policies_cli.register(sub)
    evaluate_cli.register(sub)
    figures_cli.register(sub)
    expected.register(sub)
    claims.register(sub)
    report.register(sub)
    notebooks.register(sub)
    live_cli.register(sub)
    live_cli.register_provision(sub)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except MirageError as exc:
        print(f"mirage: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mirage: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
