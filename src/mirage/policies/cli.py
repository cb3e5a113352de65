"""``mirage fit``: train policies on one cluster's training samples of one chain size (the
command line; the fit itself is mirage.policies.fitting)."""

from __future__ import annotations

import json

from mirage import options
from mirage.errors import MirageError


def _fit(args) -> None:
    if len(args.out) != len(args.policy):
        raise MirageError(f"{len(args.policy)} policies but {len(args.out)} --out directories; "
                          "give one --out per policy, in the same order")
    params = json.loads(args.params)
    if len(args.policy) > 1:  # several policies: --params maps each name to its parameters
        unknown = set(params) - set(args.policy)
        if unknown:
            raise MirageError(f"--params names {sorted(unknown)}, which are not fitted here; "
                              "with several policies it maps a policy name to its parameters")
        params = {name: params.get(name, {}) for name in args.policy}
    else:
        params = {args.policy[0]: params}
    from mirage.policies.fitting import fit_policies

    fit_policies(args.policy, params, args, args.out)


def register(sub) -> None:
    p = sub.add_parser("fit", help="train policies on a cluster's training samples")
    p.add_argument("policy", nargs="+", help="one or more policy names, fitted in this order")
    p.add_argument("--samples", required=True, help="SampleSet directory (mirage samples gather)")
    options.add_chain_nodes(p)
    options.add_seed(p, required=True)
    p.add_argument("--params", default="{}", help="JSON of the policy's parameters; with several "
                   "policies, JSON mapping a policy name to its parameters")
    options.add_costs(p)
    options.add_device(p)
    p.add_argument("--threads", type=int, default=1, help="CPU threads for the model library")
    p.add_argument("--final-from", help="the model directory of the untuned policy of a tuned "
                   "one fitted here (rf for rf_tuned, dqn for dqn_tuned, ...), fitted on the same "
                   "samples with the same seed: its model is the tuned one's final model")
    p.add_argument("--out", required=True, nargs="+",
                   help="directory for the fitted model and fit.json, one per policy")
    p.set_defaults(func=_fit)
