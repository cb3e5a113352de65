"""``mirage bench crosscheck``: this project's reinforcement learning against Stable-Baselines3
on the same environment, budgets and seeds.

The training samples of one chain size are cut in time (``mirage.policies.curves.time_split``):
the earlier part trains, the later ``--held-share`` is held out. Per algorithm and seed:

- *ours*: the project's policy (``make_policy``) fitted on the earlier part;
- *sb3*: its Stable-Baselines3 counterpart (``SB3_OF``: DQN for ``dqn``, PPO for ``ppo``, A2C,
  SB3's plain actor-critic policy gradient, for ``pg``, which SB3 lacks) trained on
  ``ProvisioningEnv`` over the same earlier part, with the same standardisation
  (``Scaler.fit`` of its compact features, as ``TorchPolicy._prepare``), the same ``stride`` as
  our policy, the same seed, the same environment steps and MLP width (net_arch [64, 64]), and
  SB3's defaults otherwise;
- *sb3_our_start* (the actor-critics): the same, but starting, as ours do, with the submit
  logit at log(1 / decisions per episode) instead of SB3's 0 (p = 1/2 per decision: a fresh
  policy then ends nearly every episode in its first few decisions and never sees the
  predecessor's last hours). The like-for-like verdict of PPO and A2C is this one's.

Both decide greedily on every held-out point (score above 0) and are scored with
``curves.HeldOut.cost_of``: mean cost per held-out sample. Ours' score is its
``decision_score``; SB3's is Q(submit) - Q(wait) for DQN and the submit-minus-wait logit for the
actor-critics. An algorithm's verdict is "agree" when the two means over seeds lie within the
larger of the two spreads over seeds (population standard deviations), else "differ".

Budgets: ``--budget-steps`` is the environment steps of each of our fits (``total_timesteps``
where the policy takes it). REINFORCE counts updates of 32 episodes: its updates are
``budget / (32 x decisions per episode)``, the decisions of an episode that stops at a
uniformly drawn decision (how its fresh policy explores), so it is approximate; each SB3 run
gets the steps our fit of the same seed actually took (``env_steps`` in the JSON for both).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from mirage import options
from mirage.errors import MirageError

#: our policy -> its Stable-Baselines3 counterpart
SB3_OF = {"dqn": "DQN", "ppo": "PPO", "pg": "A2C"}
#: Stable-Baselines3's version this cross-check is pinned to (requirements.txt)
SB3_VERSION = "2.9.2"


def _need_sb3():
    try:
        import mirage.policies  # noqa: F401  (sets the torch reproducibility flags first)
        import stable_baselines3
    except ImportError:
        raise MirageError("mirage bench crosscheck needs Stable-Baselines3, which is not "
                          f"installed. Fix: pip install 'stable-baselines3=={SB3_VERSION}' "
                          "(or the package's extra: pip install -e '.[crosscheck]')") from None
    return stable_baselines3


def check_args(names, seeds: int, budget_steps: int) -> None:
    """Refuse what cannot run, naming the fix."""
    from mirage.policies.catalogue import CATALOGUE

    unknown = [n for n in names if n not in SB3_OF or n not in CATALOGUE.fitted()]
    if unknown:
        have = [n for n in SB3_OF if n in CATALOGUE.fitted()]
        raise MirageError(f"--policies {' '.join(unknown)}: no cross-check for it here. "
                          f"Fix: pass some of {', '.join(have)}")
    if budget_steps < 1:
        raise MirageError(f"--budget-steps {budget_steps}: must be at least 1. Fix: pass the "
                          "environment steps of one fit, e.g. 80000")
    if seeds < 1:
        raise MirageError(f"--seeds {seeds}: must be at least 1. Fix: pass how many seeds, e.g. 5")


def budget_params(policy, budget_steps: int, fit_part) -> dict:
    """Our policy's budget setting for ``budget_steps`` environment steps (see the module)."""
    params = policy.get_params()
    if "total_timesteps" in params:
        return {"total_timesteps": int(budget_steps)}
    if "updates" in params:
        decisions = decisions_per_episode(fit_part, policy.stride)
        per_episode = float(np.mean((decisions + 1) / 2))  # a uniformly drawn stop
        return {"updates": max(1, round(budget_steps / (policy.episodes_per_update * per_episode)))}
    raise MirageError(f"{policy.name}: no budget setting (total_timesteps or updates). Fix: "
                      "cross-check a reinforcement-learning policy")


class StepCount:
    """A fit's monitor that keeps the environment steps it was last told (the fit's total)."""

    def __init__(self):
        self.steps = 0

    def __call__(self, env_steps, policy) -> None:
        self.steps = int(env_steps)


def fit_ours(name: str, params: dict, budget_steps: int, fit_part, seed: int, c_I, c_O):
    """Our policy ``name`` fitted on ``fit_part``: (policy, env steps taken, seconds)."""
    from mirage.policies.registry import make_policy

    policy = make_policy(name, c_I=c_I, c_O=c_O, threads=1, **params)
    budget = budget_params(policy, budget_steps, fit_part)
    policy.set_params(**{k: v for k, v in budget.items() if k not in params})
    count = StepCount()
    t0 = time.perf_counter()
    policy.fit(fit_part, seed=seed, monitor=count)
    return policy, count.steps or int(budget_steps), time.perf_counter() - t0


def fit_sb3(algo: str, fit_part, *, stride: int, hidden: int, seed: int, steps: int, c_I, c_O,
            params: dict, start_logit: float | None = None):
    """SB3's ``algo`` trained on ``fit_part``'s environment: (model, scaler, seconds).
    ``start_logit``: an actor-critic's submit-minus-wait logit before training (its action
    layer's bias; SB3 starts it at 0, p(submit) = 1/2), as our policy gradients start theirs."""
    import torch

    from mirage.outcomes import compact_matrix
    from mirage.policies.env import ProvisioningEnv, Scaler, TableEpisodes

    sb3 = _need_sb3()
    torch.set_num_threads(1)
    cols = fit_part.feature_columns
    scaler = Scaler.fit(compact_matrix(fit_part.points, cols))
    env = ProvisioningEnv(TableEpisodes(fit_part, cols, scaler, c_I, c_O), stride=stride)
    kw = {**params, "policy_kwargs": {"net_arch": [hidden, hidden],
                                      **params.get("policy_kwargs", {})}}
    t0 = time.perf_counter()
    model = getattr(sb3, algo)("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **kw)
    if start_logit is not None:
        with torch.no_grad():
            model.policy.action_net.bias.copy_(torch.tensor([0.0, float(start_logit)]))
    model.learn(total_timesteps=int(steps))
    return model, scaler, time.perf_counter() - t0


def sb3_score(model, X: np.ndarray) -> np.ndarray:
    """SB3's greedy decision score of standardised observations ``X``: Q(submit) - Q(wait) for
    DQN, the submit logit minus the wait logit for an actor-critic (PPO, A2C)."""
    import torch

    obs = torch.as_tensor(X, dtype=torch.float32)
    with torch.no_grad():
        if hasattr(model, "q_net"):
            out = model.q_net(obs)
        else:
            out = model.policy.get_distribution(obs).distribution.logits
    return (out[:, 1] - out[:, 0]).numpy()


def _stats(costs, steps, seconds, params) -> dict:
    return {"cost": costs, "mean": float(np.mean(costs)), "std": float(np.std(costs)),
            "env_steps": steps, "seconds": seconds, "params": params}


def crosscheck_one(name, fit_part, held, seeds, budget_steps, c_I, c_O, params, sb3_params,
                   progress=print) -> dict:
    """Both implementations of algorithm ``name`` over ``seeds``, scored on ``held``."""
    from mirage.outcomes import compact_matrix
    from mirage.policies.neural import start_logit

    algo = SB3_OF[name]
    variants = ["sb3"] + (["sb3_our_start"] if algo != "DQN" else [])
    rows = {key: ([], [], []) for key in ["ours", *variants]}
    for seed in seeds:
        policy, steps, secs = fit_ours(name, params, budget_steps, fit_part, seed, c_I, c_O)
        got = {"ours": (held.cost_of(policy.decision_score(held.data.points)), steps, secs)}
        stride = int(getattr(policy, "stride", 1))
        for key in variants:
            start = (start_logit(decisions_per_episode(fit_part, stride))
                     if key == "sb3_our_start" else None)
            model, scaler, s_secs = fit_sb3(algo, fit_part, stride=stride, hidden=policy.hidden,
                                            seed=seed, steps=steps, c_I=c_I, c_O=c_O,
                                            params=sb3_params, start_logit=start)
            X = scaler.transform(compact_matrix(held.data.points, fit_part.feature_columns))
            got[key] = (held.cost_of(sb3_score(model, X)), steps, s_secs)
        for key, vals in got.items():
            for col, v in zip(rows[key], vals):
                col.append(v)
        progress(f"{name} seed {seed}, {steps} env steps each: " + ", ".join(
            f"{key} {c:.3f} h ({t:.0f} s)" for key, (c, _, t) in got.items()))
    ours_p = {k: v for k, v in policy.get_params().items() if k not in ("device", "threads")}
    out = {"sb3_algorithm": algo, "stride": stride, "ours": _stats(*rows["ours"], ours_p)}
    for key in variants:
        out[key] = _stats(*rows[key], sb3_params)
        gap = abs(out["ours"]["mean"] - out[key]["mean"])
        spread = max(out["ours"]["std"], out[key]["std"])
        out[key].update(gap=gap, spread=spread, verdict="agree" if gap <= spread else "differ")
    # the verdict of the like-for-like comparison: the same start where SB3 lets us set it
    out.update({k: out[variants[-1]][k] for k in ("gap", "spread", "verdict")})
    return out


def decisions_per_episode(fit_part, stride: int) -> np.ndarray:
    """Each sample's decisions when it waits to its end, one every ``stride`` points."""
    from mirage.policies.env import decisions

    starts = fit_part.point_starts()
    return decisions(np.diff(np.append(starts, len(fit_part.points))), stride)


def crosscheck(train, names, *, seeds, budget_steps: int, held_share: float = 0.25,
               c_I: float = 1.0, c_O: float = 0.5, params=None, sb3_params=None,
               progress=print) -> dict:
    """The cross-check of ``names`` on ``train`` (one chain size's training samples)."""
    from mirage.policies.curves import HeldOut, time_split

    sb3 = _need_sb3()
    try:
        fit_part, held_part = time_split(train, held_share)
    except ValueError as e:
        raise MirageError(f"--held-share {held_share}: {e}. Fix: a share such as 0.25 of a "
                          "chain size with several training samples") from None
    held = HeldOut(held_part, c_I, c_O)
    result = {"sb3_version": sb3.__version__, "budget_steps": int(budget_steps),
              "seeds": [int(s) for s in seeds], "held_share": held_share, "c_I": c_I, "c_O": c_O,
              "train_samples": len(fit_part), "held_out_samples": len(held_part),
              "reactive_cost": held.reactive_cost, "oracle_cost": held.oracle_cost,
              "algorithms": {}}
    progress(f"{len(fit_part)} samples train, {len(held_part)} held out: reactive "
             f"{held.reactive_cost:.3f} h, oracle {held.oracle_cost:.3f} h")
    for name in names:
        result["algorithms"][name] = crosscheck_one(
            name, fit_part, held, result["seeds"], budget_steps, c_I, c_O,
            (params or {}).get(name, {}), (sb3_params or {}).get(name, {}), progress)
    return result


def table(result: dict):
    """One row per algorithm and implementation: mean, spread, per-seed costs, verdict."""
    import pandas as pd

    rows = []
    for name, a in result["algorithms"].items():
        labels = {"ours": f"mirage {name}", "sb3": f"SB3 {a['sb3_algorithm']}",
                  "sb3_our_start": f"SB3 {a['sb3_algorithm']}, our start"}
        for impl, label in labels.items():
            if impl not in a:
                continue
            r = a[impl]
            rows.append({"algorithm": name, "implementation": label,
                         "mean_cost_h": r["mean"], "std_h": r["std"],
                         "per_seed_h": " ".join(f"{c:.3f}" for c in r["cost"]),
                         "env_steps": int(np.mean(r["env_steps"])),
                         "seconds_per_fit": float(np.mean(r["seconds"])),
                         "verdict_against_ours": r.get("verdict", "")})
    return pd.DataFrame(rows)


def _bench(args) -> None:
    check_args(args.policies, args.seeds, args.budget_steps)
    from mirage.outcomes import training_samples

    params = options.settings_arg(args.params, "--params", '{"dqn": {"batch_size": 64}}')
    sb3_params = options.settings_arg(args.sb3_params, "--sb3-params", '{"dqn": {"gamma": 1.0}}')
    train = training_samples(args.samples, args.chain_nodes, at_least=2,
                             purpose="holding some out")
    result = crosscheck(train, args.policies, seeds=range(args.seed, args.seed + args.seeds),
                        budget_steps=args.budget_steps, held_share=args.held_share,
                        c_I=args.c_I, c_O=args.c_O, params=params, sb3_params=sb3_params)
    result.update(samples=str(args.samples), chain_nodes=args.chain_nodes)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    frame = table(result)
    if args.csv:
        frame.to_csv(args.csv, index=False)
    print(frame.to_markdown(index=False, floatfmt=".3f"))
    print(f"held-out reactive {result['reactive_cost']:.3f} h, oracle "
          f"{result['oracle_cost']:.3f} h; like for like: " + "; ".join(
              f"{n}: {a['verdict']} (gap {a['gap']:.3f} h, spread {a['spread']:.3f} h)"
              for n, a in result["algorithms"].items()))


def register_bench(bsub) -> None:
    b = bsub.add_parser("crosscheck", help="this project's DQN / PPO / REINFORCE against "
                        "Stable-Baselines3 on the same environment, budgets and seeds")
    b.add_argument("--samples", required=True, help="a run's SampleSet directory, e.g. "
                   "results/ls6-real/ls6/calibrated/samples")
    options.add_chain_nodes(b)
    b.add_argument("--policies", nargs="+", default=["dqn", "ppo"],
                   help=f"our policies to cross-check, of {', '.join(SB3_OF)} (default dqn ppo)")
    b.add_argument("--seeds", type=int, default=5, help="fits per implementation (default 5)")
    options.add_seed(b, help="the first seed (then seed+1, ...)")
    b.add_argument("--budget-steps", type=int, default=80_000,
                   help="environment steps of each fit, both implementations (default 80000)")
    b.add_argument("--held-share", type=float, default=0.25,
                   help="the later share of the training samples held out (default 0.25)")
    options.add_costs(b)
    b.add_argument("--params", help="our policies' settings over their defaults, as JSON, "
                   "e.g. '{\"dqn\": {\"batch_size\": 64}}'")
    b.add_argument("--sb3-params", help="SB3's settings over its defaults, as JSON per policy, "
                   "e.g. '{\"dqn\": {\"gamma\": 1.0}}'")
    b.add_argument("--out", required=True, help="the JSON written")
    b.add_argument("--csv", help="the table also as CSV")
    b.set_defaults(func=_bench)
