"""``mirage samples twin``: the twin replayed on a run's validation samples (the workflow's
decide_twin rule). The command parses its options and hands them to
:func:`mirage.twin.decide.decide_twin`."""

from __future__ import annotations

import json

from mirage import options


def decide_cmd(args) -> None:
    from mirage.twin.decide import decide_twin

    decide_twin(args.out, trace_dir=args.trace_dir, samples=args.samples, cluster=args.cluster,
                mode=args.mode, cluster_file=args.cluster_file, chain_nodes=args.chain_nodes,
                seed=args.seed, policy=args.policy, params=json.loads(args.params), c_I=args.c_I,
                c_O=args.c_O)


def register(ssub) -> None:
    """The ``twin`` command under ``mirage samples`` (``ssub``: its subparsers)."""
    p = ssub.add_parser("twin", help="fit the twin on the training trace and replay it on the "
                        "validation samples (its decisions need the queue, which the sample "
                        "tables lack): a model directory mirage evaluate reads")
    p.add_argument("--cluster", required=True)
    p.add_argument("--mode", choices=["calibrated", "compat"], default="calibrated")
    p.add_argument("--cluster-file", help="the calibrated mode's cluster description the samples "
                   "were made with (default: config/clusters/<cluster>.yaml)")
    p.add_argument("--trace-dir", required=True, help="results/<run>/<cluster>/trace (train and "
                   "validation parquet)")
    p.add_argument("--samples", required=True, help="the mode's SampleSet directory")
    options.add_chain_nodes(p)
    options.add_seed(p, required=True)
    p.add_argument("--policy", choices=["twin", "twin_tuned"], default="twin",
                   help="twin_tuned: choose the quantile level, tolerance and plan veto (with "
                   "rule plan: the overlap weight) by time-ordered cross-fitting on the training "
                   "samples first (its params may "
                   "add tune_every: every n-th training sample, default 8; tune_blocks: 4)")
    p.add_argument("--params", default="{}", help="JSON: the twin's parameters (K, rule, ...)")
    options.add_costs(p)
    p.add_argument("--out", required=True, help="model directory (fit.json, model.joblib, timing.csv)")
    p.set_defaults(func=decide_cmd)
