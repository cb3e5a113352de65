"""REINFORCE with a learned baseline and an entropy bonus, as in the reference.

Reference settings: 2 actions (wait, submit), gamma 0.99, entropy coefficient 0.1, learning
rate 0.01, 32 episodes per update, a decision every 60 simulated minutes in training
(``stride`` = 6 points). The reward is -cost in hours (the reference used -|x| in minutes;
hours keep the policy-gradient term and the entropy bonus on comparable scales).

The 32 episodes of an update are rolled out together, one batched forward pass per decision
step, instead of one environment at a time: same estimator, ~30x less Python overhead.
The submit logit starts at log(1/steps) so a fresh policy stops around a uniformly drawn step
rather than almost surely in its first few steps (at p = 1/2 no episode would ever reach the
predecessor's last hours, where the decision matters).

At decision time the policy is greedy: submit when p(submit | s) > 1/2.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from mirage.outcomes import SampleSet
from mirage.policies.neural import (
    Costs, Monitor, TorchPolicy, adam, mlp, record_every, seed_everything, start_logit,
)


@dataclass(eq=False, repr=False)
class Reinforce(Costs):
    """REINFORCE's settings, the reference's (see above), shared by ``pg`` and
    ``pg_transformer``: episodes per update, discount, entropy bonus, the learned baseline's
    loss weight, and a decision every ``stride`` points in training."""

    episodes_per_update: int = 32
    gamma: float = 0.99
    ent_coef: float = 0.1
    value_coef: float = 0.5
    stride: int = 6


@dataclass(eq=False, repr=False)
class PGConfig(Reinforce):
    updates: int = 400
    learning_rate: float = 0.01
    hidden: int = 64


@dataclass(eq=False, repr=False)
class PolicyGradient(PGConfig, TorchPolicy):
    family = "pg"
    config_class = PGConfig
    n_outputs = 1  # the submit logit

    # the submit logit; 0 is p(submit) = 1/2
    thresholds = np.round(np.arange(-8.0, 8.0 + 1e-9, 0.25), 4)

    def _train(self, train: SampleSet, seed: int, monitor: Monitor | None = None) -> None:
        cfg = self.config
        rng = seed_everything(seed)
        ep = self._prepare(train)
        dev = self.torch_device
        gen = torch.Generator().manual_seed(seed)

        policy = self.net_ = self._build_net(ep.obs_dim)
        with torch.no_grad():
            policy[-1].bias.fill_(start_logit(ep.decisions(cfg.stride)))
        value = mlp(ep.obs_dim, 1, cfg.hidden).to(dev)
        opt = adam(list(policy.parameters()) + list(value.parameters()), cfg.learning_rate)
        X = torch.from_numpy(ep.X).to(dev)

        t0 = time.perf_counter()
        self.history_ = []
        every = record_every(cfg.updates)
        env_steps = 0  # decisions taken so far, forced ones included
        for update in range(cfg.updates):
            idx = rng.integers(ep.n_samples, size=cfg.episodes_per_update)
            logps, ents, vals, ep_of, t_of = [], [], [], [], []

            def choose(t, a_idx, rows, forced):
                obs = X[rows]
                logits = policy(obs).squeeze(1)
                p = torch.sigmoid(logits)
                u = torch.rand(len(a_idx), generator=gen).to(dev)
                act = (u < p.detach()).cpu().numpy()
                chosen = ~forced  # a forced submit was not the policy's choice: no gradient
                if chosen.any():
                    c = torch.from_numpy(np.flatnonzero(chosen)).to(dev)
                    a_t = torch.from_numpy(act[chosen].astype(np.float32)).to(dev)
                    logps.append(-F.binary_cross_entropy_with_logits(
                        logits[c], a_t, reduction="none"))
                    pc = p[c].clamp(1e-6, 1 - 1e-6)
                    ents.append(-(pc * pc.log() + (1 - pc) * (1 - pc).log()))
                    vals.append(value(obs[c]).squeeze(1))
                    ep_of.append(a_idx[chosen])
                    t_of.append(np.full(int(chosen.sum()), t))
                return act

            end_step, end_row = roll_out(ep.starts[idx], ep.n[idx] - 1, cfg.stride, choose)
            reward = -ep.cost[end_row]
            env_steps += int((end_step + 1).sum())
            if not logps:
                continue
            ep_of, t_of = np.concatenate(ep_of), np.concatenate(t_of)
            G = torch.from_numpy((cfg.gamma ** (end_step[ep_of] - t_of)) * reward[ep_of]).to(
                dev, torch.float32)
            logp, ent, v = torch.cat(logps), torch.cat(ents), torch.cat(vals)
            adv = (G - v).detach()
            loss = (-(logp * adv).mean() - cfg.ent_coef * ent.mean()
                    + cfg.value_coef * F.mse_loss(v, G))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if update % every == 0:
                self.history_.append({"update": update, "mean_episode_cost": float(-reward.mean()),
                                      "entropy": float(ent.detach().mean())})
                if monitor is not None:
                    monitor(env_steps, self)
        if monitor is not None:
            monitor(env_steps, self)
        self.train_seconds_ = time.perf_counter() - t0
        policy.eval()
        self.net_ = policy

    def submit_probability(self, points) -> np.ndarray:
        return torch.sigmoid(self._outputs(points).squeeze(1)).numpy()

    def decision_score(self, points) -> np.ndarray:
        return self._outputs(points).squeeze(1).numpy()


def roll_out(start: np.ndarray, last: np.ndarray, stride: int, choose) -> tuple[np.ndarray, np.ndarray]:
    """Roll a batch of table-backed episodes out together: episode i starts at point row
    ``start[i]`` and has ``last[i]`` points after it. At decision step t,
    ``choose(t, a_idx, rows, forced)`` says which of the active episodes ``a_idx``, on their
    point ``rows``, submit (a boolean array); an episode that submits, or is ``forced`` at its
    last point, ends there; the others move ``stride`` points on, never past their last point.
    Returns each episode's end step and end row."""
    k = np.zeros(len(start), np.int64)
    active = np.ones(len(start), bool)
    end_step = np.zeros(len(start), np.int64)
    end_row = np.zeros(len(start), np.int64)
    t = 0
    while active.any():
        a_idx = np.flatnonzero(active)
        rows = start[a_idx] + k[a_idx]
        forced = k[a_idx] >= last[a_idx]
        stop = choose(t, a_idx, rows, forced) | forced
        done = a_idx[stop]
        end_step[done] = t
        end_row[done] = rows[stop]
        active[done] = False
        go = a_idx[~stop]
        k[go] = np.minimum(k[go] + stride, last[go])
        t += 1
    return end_step, end_row
