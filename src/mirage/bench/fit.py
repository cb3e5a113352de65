"""``mirage bench fit``: the workflow's fits of a config's policies on a run's samples, timed.

The fits run as rules fit_policies / fit_torch / fit_history run them: the config's seed,
costs and ``policies.params``, one process, untuned policies before their tuned twins (which
take the untuned final fit), each on ``mirage.policies.fit_threads`` threads (the history
models on two, every other policy on one). The figures are each fit's ``fit_seconds`` (what
``fit.json`` records) and the process's peak resident memory once the fit is done (the peak so
far: bench one policy per call to read its own).

``--train-samples N`` fits on the first N training samples per chain size in time order and
``--params`` overrides the config's policy settings: the paper's sizes (config/paper.yaml), whose
fits take hours on a CPU, measured for memory and time per example on a few samples.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
from pathlib import Path

import pandas as pd

from mirage import options
from mirage.errors import MirageError

#: issue 13's budget for one fit on 2 cores, marked in the table
BUDGET_S = 300.0


def fitted_names(config: dict) -> list[str]:
    """The config's policies that the workflow fits on the samples: not the twins, which are
    replayed on the validation samples (rule decide_twin)."""
    from mirage.policies.catalogue import CATALOGUE

    return [p for p in config["policies"]["names"] if p in CATALOGUE.fitted()]


def peak_rss_gb() -> float:
    """This process's peak resident memory so far (GB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (1e9 if sys.platform == "darwin" else 1e9 / 1024)


def bench_fit(samples, config: dict, policies, chain_nodes, *, device: str = "cpu",
              out_dir=None, budget_s: float = BUDGET_S, train_samples: int | None = None,
              params: dict | None = None) -> pd.DataFrame:
    """One row per chain size and policy: threads, seconds, whether within ``budget_s``, peak
    memory so far. ``train_samples``: the first N training samples per chain size in time order
    (all: None). ``params``: policy name -> settings over the config's ``policies.params``."""
    from mirage.outcomes import SampleSet
    from mirage.policies import fit_threads
    from mirage.policies.catalogue import CATALOGUE
    from mirage.policies.fitting import fit_one

    data = SampleSet.load(samples)
    train = data.split("train")
    params = {name: {**config.get("policies", {}).get("params", {}).get(name, {}),
                     **(params or {}).get(name, {})} for name in policies}
    costs = config.get("policies", {}).get("costs", {})
    c_I, c_O = float(costs.get("c_I", 1.0)), float(costs.get("c_O", 0.5))
    order = sorted(policies, key=lambda p: p in CATALOGUE.tuned_of())  # untuned first, as the workflow
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(out_dir) if out_dir else Path(tmp)
        for nodes in chain_nodes:
            mine = train.samples[train.samples["chain_nodes"] == nodes]
            if train_samples is not None:
                mine = mine.sort_values(["sample_start", "sample_id"]).head(int(train_samples))
            part = train.subset(mine["sample_id"])
            if len(part) == 0:
                raise MirageError(f"{samples}: no training samples with chain_nodes={nodes}. "
                                  "Fix: pass --chain-nodes of the run's samples")
            finals = []
            for name in order:
                threads = fit_threads(name)
                args = argparse.Namespace(c_I=c_I, c_O=c_O, device=device, threads=threads,
                                          chain_nodes=nodes, seed=int(config["seed"]))
                out = root / f"n{nodes}" / name
                finals.append(fit_one(name, params.get(name, {}), part, args, out, finals=finals))
                info = pd.read_json(out / "fit.json", typ="series")
                rows.append({"chain_nodes": nodes, "policy": name, "threads": threads,
                             "train_samples": len(part), "seconds": float(info["fit_seconds"]),
                             "final_fit_shared": "final_model_from" in info,
                             "peak_rss_gb": round(peak_rss_gb(), 2)})
    table = pd.DataFrame(rows)
    table["within_budget"] = table["seconds"] <= budget_s
    return table


def _bench(args) -> None:
    from mirage import config as config_mod

    config = config_mod.load(args.config)
    policies = args.policies or fitted_names(config)
    params = options.settings_arg(args.params, "--params", '{"moe": {"epochs": 1}}')
    if args.train_samples is not None and args.train_samples < 1:
        raise MirageError(f"--train-samples {args.train_samples}: must be at least 1. Fix: pass "
                          "a positive count, or leave it out for every training sample")
    table = bench_fit(args.samples, config, policies, args.chain_nodes, device=args.device,
                      out_dir=args.out_dir, budget_s=args.budget_s,
                      train_samples=args.train_samples, params=params)
    print(table.to_markdown(index=False))
    for nodes, part in table.groupby("chain_nodes"):
        over = part.loc[~part["within_budget"], "policy"].tolist()
        print(f"n={nodes}: {part['seconds'].sum():.1f} s in all; slowest "
              f"{part.loc[part['seconds'].idxmax(), 'policy']} {part['seconds'].max():.1f} s; "
              + (f"over {args.budget_s:g} s: {', '.join(over)}" if over
                 else f"every fit within {args.budget_s:g} s"))


def register_bench(bsub) -> None:
    b = bsub.add_parser("fit", help="the workflow's fits of a config's policies on a run's "
                        "samples, timed (history models on their two threads)")
    b.add_argument("--samples", required=True, help="a run's SampleSet directory, e.g. "
                   "results/ls6-real/ls6/calibrated/samples")
    b.add_argument("--config", required=True, help="the run's config (over config/defaults.yaml): "
                   "seed, costs and policies.params")
    b.add_argument("--policies", nargs="*", help="default: the config's policies.names")
    options.add_chain_nodes(b, many=True, default=[1, 8])
    options.add_device(b)
    b.add_argument("--budget-s", type=float, default=BUDGET_S,
                   help="mark fits longer than this (default 300 s)")
    b.add_argument("--out-dir", help="keep the fitted models here (default: a temporary directory)")
    b.add_argument("--train-samples", type=int, help="fit on the first N training samples per "
                   "chain size in time order (default: all)")
    b.add_argument("--params", help="settings over the config's, as JSON: policy name -> "
                   "settings, e.g. '{\"moe\": {\"epochs\": 1}}'")
    b.set_defaults(func=_bench)
