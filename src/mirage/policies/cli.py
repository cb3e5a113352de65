"""``mirage fit``: train policies on one cluster's training samples of one chain size."""

from __future__ import annotations

import inspect
import json
import time
from pathlib import Path

from mirage.errors import MirageError


def policy_params(name: str, params: dict, *, c_I: float, c_O: float, device: str, threads: int = 1) -> dict:
    """The config's parameters for ``name`` plus the costs, device and threads where the policy
    takes them (threads come from the rule, not the config)."""
    from mirage.policies.registry import POLICIES, TORCH_POLICIES, _FACTORIES
    from mirage.policies.replayed import REPLAYED_POLICY_NAMES

    if name in REPLAYED_POLICY_NAMES:
        raise MirageError(f"{name} is not fitted on the samples: it is fitted on the training "
                          "trace and replayed on the validation samples. Fix: `mirage samples "
                          f"twin --policy {name}` (the workflow's decide_twin rule)")
    if name not in POLICIES:
        raise MirageError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")
    out = dict(params)
    if name in TORCH_POLICIES:
        cls = TORCH_POLICIES[name]
        own = set(inspect.signature(cls.__init__).parameters) - {"self", "config"}
        # tune_threshold is the policy's name (dqn vs dqn_tuned), not a setting
        accepted = set(cls.config_class.__dataclass_fields__) | own - {"tune_threshold"}
        out.setdefault("device", device)
    else:
        factory = _FACTORIES[name]
        target = factory if inspect.isclass(factory) else None
        from mirage.policies.trees import RegressorPolicy

        target = target or RegressorPolicy
        accepted = set(inspect.signature(target.__init__).parameters) - {"self"}
    unknown = set(out) - accepted
    if unknown:
        raise MirageError(
            f"policy {name!r} does not take parameter(s) {sorted(unknown)}; it takes {sorted(accepted)}. "
            "Fix `policies.params` in the config"
        )
    for key, value in (("c_I", c_I), ("c_O", c_O), ("threads", threads), ("n_jobs", threads)):
        if key in accepted:
            out.setdefault(key, value)
    return out


#: a tuned policy and the untuned one whose final fit it shares: tuning cross-fits a threshold
#: and then fits the same model on the same samples with the same seed as the untuned policy,
#: so where both are fitted, the untuned policy's model is taken instead of fitting it again
TUNED_OF = {"rf_tuned": "rf", "xgb_tuned": "xgb", "dqn_tuned": "dqn", "pg_tuned": "pg",
            "transformer_tuned": "transformer", "moe_tuned": "moe"}
#: the settings of tuning alone, which the two may differ in
TUNING_KEYS = frozenset({"tune_threshold", "thresholds", "n_blocks", "threshold", "tune_every",
                         "tune_model_params"})


def final_fit_mismatch(tuned, base) -> list[str]:
    """The settings (other than tuning's) in which policy ``base`` was not fitted like the
    final model of ``tuned`` would be; empty when ``tuned`` may take ``base``'s model."""
    a = {k: v for k, v in tuned.get_params().items() if k not in TUNING_KEYS}
    b = {k: v for k, v in base.get_params().items() if k not in TUNING_KEYS}
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def _fit(args) -> None:
    from mirage.outcomes import SampleSet

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
    from mirage.policies.registry import make_policy

    made = {name: make_policy(name, **_params(name, params[name], args)) for name in args.policy}
    # the 144x42 history only where a policy reads it: on the real trace reading it and copying
    # it into every cross-fit's parts took seconds of each fit job
    data = SampleSet.load(args.samples, history=any(p.needs_history for p in made.values()))
    train = data.split("train")
    train = train.subset(train.samples.loc[train.samples["chain_nodes"] == args.chain_nodes, "sample_id"])
    if len(train) == 0:
        raise MirageError(
            f"{args.samples}: no training samples with chain_nodes={args.chain_nodes}; "
            "check samples.chain_nodes and the training window in the config"
        )
    finals = {}  # the untuned policies fitted here, whose model a tuned one takes
    if args.final_from:
        finals[args.final_from] = _final_from(args.final_from, args, train)
    # the samples are read once for every policy: one process per policy would spend more
    # starting Python and reading them than most policies take to fit
    for name, out in zip(args.policy, args.out):
        finals[str(out)] = fit_one(name, params[name], train, args, Path(out),
                                   finals=list(finals.values()), policy=made[name])


def _final_from(directory, args, train):
    """The policy saved in ``directory`` (``--final-from``), checked to be fitted on these
    samples with this seed; its ``fit.json`` is kept on it as ``fit_info_``."""
    d = Path(directory)
    if not (d / "fit.json").exists():
        raise MirageError(f"--final-from {d}: no fitted model (fit.json). Fix: fit the untuned "
                          "policy first, or leave --final-from out")
    info = json.loads((d / "fit.json").read_text())
    want = {"seed": args.seed, "chain_nodes": args.chain_nodes, "train_samples": len(train),
            "train_points": len(train.points)}
    off = {k: (info.get(k), v) for k, v in want.items() if info.get(k) != v}
    if off:
        raise MirageError(f"--final-from {d} was fitted otherwise ({', '.join(f'{k} {a} here {b}' for k, (a, b) in off.items())}). "
                          "Fix: refit it with these samples and seed, or leave --final-from out")
    policy = load_fitted(d, device=args.device)
    policy.fit_info_ = {**info, "dir": str(d)}
    return policy


def _params(name: str, params: dict, args) -> dict:
    return policy_params(name, params, c_I=args.c_I, c_O=args.c_O, device=args.device,
                         threads=args.threads)


def fit_one(name: str, params: dict, train, args, out: Path, finals=(), policy=None):
    """Fit one policy on ``train`` and save it with its ``fit.json`` (and training curve); a
    tuned policy takes its final model from the matching untuned policy of ``finals`` (fitted
    on the same samples with the same seed and settings) instead of fitting it again.
    ``policy``: the unfitted policy, made from these parameters (made here when None)."""
    from mirage.policies.registry import TORCH_POLICIES, make_policy, save_policy

    params = _params(name, params, args)
    if policy is None:
        policy = make_policy(name, **params)
    base = None
    if name in TUNED_OF:
        for cand in finals:
            if getattr(cand, "name", None) == TUNED_OF[name] and not final_fit_mismatch(policy, cand):
                base = cand
                break
    t0 = time.perf_counter()
    policy.fit(train, seed=args.seed, **({"final_from": base} if base is not None else {}))
    seconds = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    path = save_policy(policy, out / ("model.pt" if name in TORCH_POLICIES else "model.joblib"))
    info = {"policy": name, "params": params, "seed": args.seed, "chain_nodes": args.chain_nodes,
            "train_samples": len(train), "train_points": len(train.points), "fit_seconds": round(seconds, 2),
            "model": path.name}
    if base is not None:
        info["final_model_from"] = base.name
    (out / "fit.json").write_text(json.dumps(info, indent=2, default=str) + "\n")
    if write_history(policy, out) is None and base is not None:
        src = Path(getattr(base, "fit_info_", {}).get("dir", "")) / "training.csv"
        if src.is_file():  # the shared final fit's curve, from the untuned policy's directory
            (out / "training.csv").write_bytes(src.read_bytes())
    shared = f" (final model of {base.name})" if base is not None else ""
    print(f"{name} n={args.chain_nodes}: fitted on {len(train)} samples in {seconds:.1f} s{shared} "
          f"-> {path}", flush=True)
    return policy


def write_history(policy, out) -> Path | None:
    """The fit's training curve (``history_`` of DQN and policy gradient) as ``training.csv``
    in the model directory, for ``mirage figures training``; None for the other policies."""
    history = getattr(policy, "history_", None)
    if not history:
        return None
    import pandas as pd

    path = Path(out) / "training.csv"
    pd.DataFrame(history).to_csv(path, index=False)
    return path


def load_fitted(directory, device: str | None = None):
    """The policy saved by ``mirage fit`` in ``directory``."""
    from mirage.policies.registry import load_policy

    d = Path(directory)
    info = json.loads((d / "fit.json").read_text())
    return load_policy(d / info["model"], device=device)


def register(sub) -> None:
    p = sub.add_parser("fit", help="train policies on a cluster's training samples")
    p.add_argument("policy", nargs="+", help="one or more policy names, fitted in this order")
    p.add_argument("--samples", required=True, help="SampleSet directory (mirage samples gather)")
    p.add_argument("--chain-nodes", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--params", default="{}", help="JSON of the policy's parameters; with several "
                   "policies, JSON mapping a policy name to its parameters")
    p.add_argument("--c-I", dest="c_I", type=float, default=1.0, help="cost of an hour of interruption")
    p.add_argument("--c-O", dest="c_O", type=float, default=0.5, help="cost of an hour of overlap")
    p.add_argument("--device", default="cpu", help="torch device for DQN / policy gradient")
    p.add_argument("--threads", type=int, default=1, help="CPU threads for the model library")
    p.add_argument("--final-from", help="the model directory of the untuned policy of a tuned "
                   "one fitted here (rf for rf_tuned, dqn for dqn_tuned, ...), fitted on the same "
                   "samples with the same seed: its model is the tuned one's final model")
    p.add_argument("--out", required=True, nargs="+",
                   help="directory for the fitted model and fit.json, one per policy")
    p.set_defaults(func=_fit)
