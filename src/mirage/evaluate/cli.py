"""``mirage evaluate``: every fitted policy on a cluster's validation samples, per simulator mode."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from mirage import options
from mirage.errors import MirageError


#: the policies that keep a cost-against-lead sweep of their training samples (``sweep_``)
LEAD_POLICIES = ("fixed_lead", "plan_lead")
LEAD_SWEEP_COLUMNS = ["mode", "chain_nodes", "policy", "split", "lead_h", "cost",
                      "mean_interruption_h", "mean_overlap_h", "zero_interruption_share",
                      "chosen_lead_h"]


def lead_sweeps(policies: dict, validation, c_I: float, c_O: float) -> list[pd.DataFrame]:
    """The fitted lead policies' training sweeps and the same leads on ``validation``, one
    table each with ``policy``, ``split`` and the lead the fit chose (``chosen_lead_h``)."""
    from mirage.policies.baselines import lead_sweep

    out = []
    for name in LEAD_POLICIES:
        pol = policies.get(name)
        if pol is None or getattr(pol, "sweep_", None) is None:
            continue
        allow = pol._allow(validation.points)  # plan_lead's veto; None for fixed_lead
        for split, sw in (("train", pol.sweep_),
                          ("validation", lead_sweep(validation, pol.leads_, c_I, c_O, allow=allow))):
            out.append(sw.assign(policy=name, split=split, chosen_lead_h=pol.lead_h_))
    return out


def _evaluate(args) -> None:
    from mirage.evaluate.metrics import evaluation_tables, outcomes, to_markdown
    from mirage.policies import replica_names
    from mirage.policies.fitting import load_fitted
    from mirage.outcomes import SampleSet

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    all_outcomes, fits, sweeps = [], [], []
    for mode, samples_dir, models_dir in args.run:
        # the 144x42 history is read only when a policy reads it (see below)
        val = SampleSet.load(samples_dir, history=False).split("validation")
        if len(val) == 0:
            raise MirageError(f"{samples_dir}: no validation samples; check the validation window in the config")
        cells = {}
        for nodes in sorted(val.samples["chain_nodes"].unique()):
            # replicas[k]: the policies' fits with training seed k (k > 0: the seeded ones only)
            replicas: list[dict] = []
            seeds: list[dict] = []
            for name in args.policies:
                for k, replica in enumerate(replica_names(name, args.training_seeds)):
                    d = Path(models_dir) / f"n{nodes}" / replica
                    if not (d / "fit.json").exists():
                        raise MirageError(f"{d}: no fitted model (fit.json). Fix: fit it with "
                                          "`mirage fit`, or run the workflow's `evaluation` "
                                          "target, which fits every training seed")
                    info = json.loads((d / "fit.json").read_text())
                    if k == len(replicas):
                        replicas.append({})
                        seeds.append({})
                    replicas[k][name] = load_fitted(d, device=args.device)
                    seeds[k][name] = int(info["seed"])
                    fits.append({"mode": mode, "chain_nodes": int(nodes), **info})
            cells[nodes] = replicas, seeds
        fitted = [p for replicas, _ in cells.values() for r in replicas for p in r.values()]
        if any(getattr(p, "needs_history", False) for p in fitted):
            val = SampleSet.load(samples_dir).split("validation")
        for nodes, (replicas, seeds) in cells.items():
            part = val.subset(val.samples.loc[val.samples["chain_nodes"] == nodes, "sample_id"])
            for k, policies in enumerate(replicas):
                res = outcomes(policies, part, c_I=args.c_I, c_O=args.c_O)
                all_outcomes.append(res.assign(mode=mode, seed=res["policy"].map(seeds[k])))
            policies = replicas[0]
            sweeps += [sw.assign(mode=mode, chain_nodes=int(nodes))
                       for sw in lead_sweeps(policies, part, args.c_I, args.c_O)]
    out = pd.concat(all_outcomes, ignore_index=True)
    table, spread = evaluation_tables(out)
    table.to_csv(out_dir / "evaluation.csv", index=False)
    # the spread over training seeds of the policies fitted more than once (a header alone
    # when every policy was fitted once)
    spread.to_csv(out_dir / "seeds.csv", index=False)
    title = f"# {args.label}: every policy on the validation samples\n\n" if args.label else ""
    (out_dir / "evaluation.md").write_text(title + to_markdown(table) + "\n")
    out.to_parquet(out_dir / "outcomes.parquet", index=False)
    pd.DataFrame(fits).to_csv(out_dir / "fits.csv", index=False)
    # the data of the lead-sweep figures (mirage figures evaluation); a header alone when no
    # lead policy was evaluated
    sweep = (pd.concat(sweeps, ignore_index=True)[LEAD_SWEEP_COLUMNS] if sweeps
             else pd.DataFrame(columns=LEAD_SWEEP_COLUMNS))
    sweep.to_csv(out_dir / "lead_sweep.csv", index=False)
    best = table[(table["load_level"] == "all") & ~table["policy"].isin(["oracle"])]
    best = best.loc[best.groupby(["mode", "chain_nodes"])["cost"].idxmin()]
    print(best[["mode", "chain_nodes", "policy", "cost", "zero_interruption_share", "mean_overlap_h"]].to_string(index=False))


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="evaluate fitted policies on validation samples")
    p.add_argument("--run", nargs=3, action="append", required=True, metavar=("MODE", "SAMPLES", "MODELS"),
                   help="simulator mode, its SampleSet directory and its models directory (repeatable)")
    p.add_argument("--policies", nargs="+", required=True)
    p.add_argument("--label", default="", help="the cluster's label (e.g. 'Longhorn V100 "
                   "(synthetic stand-in)'), the heading of evaluation.md")
    options.add_costs(p)
    options.add_device(p)
    p.add_argument("--training-seeds", type=int, default=1,
                   help="fits per seeded (RL) policy: POLICY, POLICY-seed1, ... in the models "
                        "directory; reported as their mean, the spread in seeds.csv")
    p.add_argument("--out-dir", required=True,
                   help="evaluation.csv/.md, outcomes.parquet, fits.csv, lead_sweep.csv, seeds.csv "
                        "(figures: mirage figures evaluation)")
    p.set_defaults(func=_evaluate)


def _curves(args) -> None:
    import pandas as pd

    from mirage.outcomes import training_samples
    from mirage.evaluate.curves import plateaus
    from mirage.policies.curves import learning_curve
    from mirage.policies.catalogue import CATALOGUE
    from mirage.policies.registry import make_policy, policy_params

    rl = CATALOGUE.reinforcement_learning(tuned=False)
    if set(args.policy) - set(rl):
        raise MirageError(f"{sorted(set(args.policy) - set(rl))}: learning curves are drawn for "
                          f"the reinforcement-learning policies ({', '.join(rl)}); a tuned one "
                          "trains as its untuned policy does")
    if args.seeds < 1:
        raise MirageError(f"--seeds {args.seeds}: give at least 1 training seed")
    params = options.settings_arg(args.params, "--params", '{"dqn": {"total_timesteps": 80000}}')
    train = training_samples(args.samples, args.chain_nodes, at_least=4,
                             purpose="a held-out part")

    def progress(name, seed, frame):
        last = frame.iloc[-1]
        print(f"{name} seed {seed}: {int(last.env_steps):,} env steps in {last.seconds:.1f} s, "
              f"held-out cost {last.held_out_cost:.3f} h (reactive {last.reactive_cost:.3f}, "
              f"oracle {last.oracle_cost:.3f})", flush=True)

    frames = []
    for name in args.policy:
        kw = policy_params(name, params.get(name, {}), c_I=args.c_I, c_O=args.c_O,
                           device=args.device, threads=args.threads)
        seeds = range(args.seed, args.seed + args.seeds)
        frames.append(learning_curve(lambda: make_policy(name, **kw), name, train, seeds,
                                            args.held_share, args.c_I, args.c_O, progress))
    table = pd.concat(frames, ignore_index=True).assign(chain_nodes=args.chain_nodes)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "curves.csv", index=False)
    flat = plateaus(table).assign(chain_nodes=args.chain_nodes)
    flat.to_csv(out / "plateaus.csv", index=False)
    print(flat.to_string(index=False), flush=True)


def register_curves(sub) -> None:
    p = sub.add_parser("curves", help="learning curves of the reinforcement-learning policies: "
                       "held-out cost against environment steps over training seeds")
    p.add_argument("policy", nargs="+", help="reinforcement-learning policies (dqn, pg, ppo, ...)")
    p.add_argument("--samples", required=True, help="SampleSet directory (mirage samples gather)")
    options.add_chain_nodes(p)
    options.add_seed(p, required=True)
    p.add_argument("--seeds", type=int, default=5, help="training seeds: seed, seed+1, ...")
    p.add_argument("--held-share", type=float, default=0.25, help="the later share of the "
                   "training samples (by start time) held out to score the curves")
    p.add_argument("--params", default="{}", help="JSON mapping a policy name to its parameters "
                   "(the budget of a curve: e.g. {\"dqn\": {\"total_timesteps\": 400000}})")
    options.add_costs(p)
    options.add_device(p)
    p.add_argument("--threads", type=int, default=1, help="CPU threads for torch")
    p.add_argument("--out", required=True, help="directory for curves.csv and plateaus.csv")
    p.set_defaults(func=_curves)
