"""Fitting policies on one cluster's training samples of one chain size and saving each in its
model directory (``fit.json``, the model, the training curve): what `mirage fit`
(mirage.policies.cli) runs once it has parsed its arguments.

The fit's settings (``args``) are `mirage fit`'s arguments: ``samples``, ``chain_nodes``,
``seed``, ``c_I``, ``c_O``, ``device``, ``threads`` and ``final_from``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from mirage.errors import MirageError


def fit_policies(names: list[str], params: dict, args, outs: list) -> None:
    """Fit ``names`` (policy -> its config parameters in ``params``) in this order on the
    training samples of ``args.chain_nodes``, each into its directory of ``outs``; a tuned
    policy takes the final model of its untuned one fitted before it (or ``--final-from``)."""
    from mirage.outcomes import training_samples
    from mirage.policies.registry import make_policy

    made = {name: make_policy(name, **_params(name, params[name], args)) for name in names}
    # the 144x42 history only where a policy reads it: on the real trace reading it and copying
    # it into every cross-fit's parts took seconds of each fit job
    train = training_samples(args.samples, args.chain_nodes,
                             history=any(p.needs_history for p in made.values()))
    finals = {}  # the untuned policies fitted here, whose model a tuned one takes
    if args.final_from:
        finals[args.final_from] = _final_from(args.final_from, args, train)
    # the samples are read once for every policy: one process per policy would spend more
    # starting Python and reading them than most policies take to fit
    for name, out in zip(names, outs):
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
    from mirage.policies.registry import policy_params

    return policy_params(name, params, c_I=args.c_I, c_O=args.c_O, device=args.device,
                         threads=args.threads)


def fit_one(name: str, params: dict, train, args, out: Path, finals=(), policy=None):
    """Fit one policy on ``train`` and save it with its ``fit.json`` (and training curve); a
    tuned policy takes its final model from the matching untuned policy of ``finals`` (fitted
    on the same samples with the same seed and settings) instead of fitting it again.
    ``policy``: the unfitted policy, made from these parameters (made here when None)."""
    from mirage.policies.registry import make_policy, model_file, save_policy, shared_final

    params = _params(name, params, args)
    if policy is None:
        policy = make_policy(name, **params)
    base = shared_final(name, policy, finals)
    t0 = time.perf_counter()
    policy.fit(train, seed=args.seed, **({"final_from": base} if base is not None else {}))
    seconds = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    path = save_policy(policy, out / model_file(name))
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
