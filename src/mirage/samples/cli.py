"""``mirage samples shard|gather``: the sample stage's commands (``mirage samples twin`` is the
twin's own, mirage.twin.cli, added to these by mirage.cli)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from mirage import options


def _shard(args) -> None:
    from mirage.samples.shards import Plan, run_shard

    plan = Plan(
        cluster=args.cluster,
        windows={"train": tuple(args.train_window), "validation": tuple(args.validation_window)},
        every_hours=args.every_hours,
        chain_nodes=tuple(args.chain_nodes),
        train_every_hours=args.train_every_hours,
    )
    traces = {"train": pd.read_parquet(args.train), "validation": pd.read_parquet(args.validation)}
    data = run_shard(plan, traces, shard=args.shard, shards=args.shards, mode=args.mode,
                     cluster_file=args.cluster_file)
    data.save(args.out)
    print(f"{args.cluster} {args.mode} shard {args.shard}/{args.shards}: {len(data)} samples, "
          f"{len(data.points)} decision points -> {args.out}")


def _gather(args) -> None:
    from mirage.samples.shards import gather

    data = gather(args.shards)
    data.validate()
    data.save(args.out)
    summary = (
        data.samples.groupby(["split", "chain_nodes"])
        .agg(samples=("sample_id", "size"), points=("n_points", "sum"), reactive_x_h_mean=("reactive_x_h", "mean"))
        .reset_index()
    )
    Path(args.summary).write_text(json.dumps(summary.to_dict(orient="records"), indent=2, default=str) + "\n")
    print(summary.to_string(index=False))


def register(sub):
    """The ``samples`` command and its subcommands; returns their subparsers (mirage.cli adds
    the twin's command, which sits on a floor above, to them)."""
    samples = sub.add_parser("samples", help="provisioning samples from the simulator")
    ssub = samples.add_subparsers(dest="samples_command", required=True)
    p = ssub.add_parser("shard", help="simulate one shard of a cluster's samples")
    p.add_argument("--cluster", required=True)
    p.add_argument("--train", required=True, help="training split (parquet)")
    p.add_argument("--validation", required=True, help="validation split (parquet)")
    p.add_argument("--train-window", nargs=2, required=True, metavar=("START", "END"))
    p.add_argument("--validation-window", nargs=2, required=True, metavar=("START", "END"))
    p.add_argument("--every-hours", type=float, required=True,
                   help="hours between two sample starts of a window")
    p.add_argument("--train-every-hours", type=float,
                   help="the training window's spacing, where it differs (default: --every-hours)")
    options.add_chain_nodes(p, many=True)
    p.add_argument("--mode", choices=["calibrated", "compat"], default="calibrated")
    p.add_argument("--cluster-file", help="the calibrated mode's cluster description (default: "
                   "config/clusters/<cluster>.yaml), e.g. one fitted by mirage sim calibrate")
    p.add_argument("--shard", type=int, required=True)
    p.add_argument("--shards", type=int, required=True)
    p.add_argument("--out", required=True, help="directory for the shard's SampleSet")
    p.set_defaults(func=_shard)
    p = ssub.add_parser("gather", help="join shard directories into one SampleSet")
    p.add_argument("shards", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--summary", required=True, help="JSON: samples and points per split and chain size")
    p.set_defaults(func=_gather)
    return ssub
