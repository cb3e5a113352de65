"""``mirage trace ...``: read, clean, split, summarise and fetch job traces (synthetic traces:
``mirage sim synth``, since the simulator schedules them)."""

from __future__ import annotations

import json
from pathlib import Path


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


def _trace_summary(args) -> None:
    import pandas as pd

    from mirage.traces.summary import compare_summaries, trace_summary

    jobs = pd.read_parquet(args.input)
    reference = pd.read_parquet(args.reference) if args.reference else None
    summary = {"trace": trace_summary(jobs)}
    if reference is not None:
        summary["reference"] = trace_summary(reference)
        summary["difference"] = compare_summaries(summary["trace"], summary["reference"])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(summary, indent=2, default=float) + "\n")
    p = summary["trace"]
    print(f"{args.input}: {p['jobs']} jobs, {p['jobs_per_day']:.1f}/day, mean busy nodes "
          f"{p['busy_nodes_mean']:.1f}, {p['wait_over_1h_share']:.1%} wait > 1 h -> {args.out}")


def _trace_fetch(args) -> None:
    from mirage.traces.fetch import fetch

    info = fetch(args.cluster, args.out, timeout=args.timeout)
    print(json.dumps(info, indent=2))


def register(sub) -> None:
    trace = sub.add_parser("trace", help="read, clean, split, summarise and fetch job traces")
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

    p = tsub.add_parser("split", help="cut a clean trace into training and validation windows")
    p.add_argument("input")
    for name in ("train", "validation"):
        p.add_argument(f"--{name}-start", required=True)
        p.add_argument(f"--{name}-end", required=True)
        p.add_argument(f"--{name}-out", required=True)
    p.add_argument("--history-hours", type=float, required=True)
    p.add_argument("--horizon-hours", type=float, required=True)
    p.set_defaults(func=_trace_split)

    p = tsub.add_parser("summary", help="statistics of a clean trace (JSON; figures: mirage figures trace)")
    p.add_argument("input", help="clean canonical table (.parquet)")
    p.add_argument("--out", required=True, help="summary JSON")
    p.add_argument("--reference", help="another clean table to compare with (e.g. the real trace)")
    p.set_defaults(func=_trace_summary)

    p = tsub.add_parser("fetch", help="download a published trace (needs network)")
    p.add_argument("cluster")
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=60.0)
    p.set_defaults(func=_trace_fetch)
