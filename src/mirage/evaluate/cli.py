"""``mirage evaluate``: every fitted policy on a cluster's validation samples, per simulator mode."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from mirage.errors import MirageError


def _evaluate(args) -> None:
    from mirage.evaluate.figures import plot_lead_sweep, plot_level_tradeoff, plot_x_distributions
    from mirage.evaluate.metrics import outcomes, summarize, to_markdown
    from mirage.policies.baselines import lead_sweep
    from mirage.policies.cli import load_fitted
    from mirage.policies.data import SampleSet

    out_dir, fig_dir = Path(args.out_dir), Path(args.figures_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig_dir.mkdir(parents=True, exist_ok=True)
    all_outcomes, fits = [], []
    for mode, samples_dir, models_dir in args.run:
        data = SampleSet.load(samples_dir)
        val = data.split("validation")
        if len(val) == 0:
            raise MirageError(f"{samples_dir}: no validation samples; check the validation window in the config")
        for nodes in sorted(val.samples["chain_nodes"].unique()):
            part = val.subset(val.samples.loc[val.samples["chain_nodes"] == nodes, "sample_id"])
            policies = {}
            for name in args.policies:
                d = Path(models_dir) / f"n{nodes}" / name
                policies[name] = load_fitted(d, device=args.device)
                fits.append({"mode": mode, "chain_nodes": int(nodes), **json.loads((d / "fit.json").read_text())})
            res = outcomes(policies, part, c_I=args.c_I, c_O=args.c_O)
            all_outcomes.append(res.assign(mode=mode))
            if "fixed_lead" in policies and policies["fixed_lead"].sweep_ is not None:
                sweeps = {"train": policies["fixed_lead"].sweep_,
                          "validation": lead_sweep(part, policies["fixed_lead"].leads, args.c_I, args.c_O)}
                plot_lead_sweep(sweeps, fig_dir / f"lead_sweep_{mode}_n{nodes}.png",
                                policies["fixed_lead"].lead_h)
    out = pd.concat(all_outcomes, ignore_index=True)
    tables = []
    for mode, part in out.groupby("mode", sort=False):
        tables.append(summarize(part.drop(columns="mode")).assign(mode=mode))
        # one figure per (cluster, mode, chain size): x_<cluster>_<mode>_n<nodes>.png
        label = part["cluster"] + f"_{mode}_n" + part["chain_nodes"].astype(str)
        plot_x_distributions(part.assign(cluster=label), fig_dir)
    table = pd.concat(tables, ignore_index=True)
    table = table[["cluster", "mode"] + [c for c in table.columns if c not in ("cluster", "mode")]]
    table.to_csv(out_dir / "evaluation.csv", index=False)
    (out_dir / "evaluation.md").write_text(to_markdown(table) + "\n")
    out.to_parquet(out_dir / "outcomes.parquet", index=False)
    pd.DataFrame(fits).to_csv(out_dir / "fits.csv", index=False)
    for cluster, part in table.groupby("cluster", sort=True):  # after the tables: they cost more
        plot_level_tradeoff(part, fig_dir / f"level_tradeoff_{cluster}.png")
    best = table[(table["load_level"] == "all") & ~table["policy"].isin(["oracle"])]
    best = best.loc[best.groupby(["mode", "chain_nodes"])["cost"].idxmin()]
    print(best[["mode", "chain_nodes", "policy", "cost", "zero_interruption_share", "mean_overlap_h"]].to_string(index=False))


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="evaluate fitted policies on validation samples")
    p.add_argument("--run", nargs=3, action="append", required=True, metavar=("MODE", "SAMPLES", "MODELS"),
                   help="simulator mode, its SampleSet directory and its models directory (repeatable)")
    p.add_argument("--policies", nargs="+", required=True)
    p.add_argument("--c-I", dest="c_I", type=float, default=1.0)
    p.add_argument("--c-O", dest="c_O", type=float, default=0.5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out-dir", required=True, help="evaluation.csv/.md, outcomes.parquet, fits.csv")
    p.add_argument("--figures-dir", required=True, help="x distributions, lead sweeps and load-level trade-offs (PNG)")
    p.set_defaults(func=_evaluate)
