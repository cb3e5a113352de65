"""Proximal Policy Optimization on the sample tables, CleanRL-style (one readable training loop).

Decisions: the submit logit of an MLP actor on the standardised compact features; greedy at
decision time (submit when the logit > 0, p(submit) > 1/2). A separate MLP critic estimates
the value of a state (minus the expected cost in hours) for the advantages; it only serves
training, so only the actor is kept (``net_``).

One update: ``num_envs`` whole episodes (samples drawn at random) rolled out together, one
batched forward pass per decision step (mirage.policies.pg.roll_out); GAE(gamma, lambda) over
each episode's decisions; then ``update_epochs`` passes over the rollout's decisions in
``num_minibatches`` shuffled minibatches of the clipped surrogate, the value loss and an entropy
bonus. The run ends after the first update that brings the environment steps (decisions taken,
forced ones included) to ``total_timesteps``.

The reward is -cost in hours at the submit, nothing before it. A submit forced at an episode's
last point (the predecessor has ended) is not the policy's choice: it gets no log-probability,
and its cost is the reward of the policy's last decision, to wait, which then ends the episode.

Choices where CleanRL's defaults do not fit, each for a reason:
- gamma = 1: the only reward is the terminal -cost, so discounting would make a later submit
  look cheaper than it is and push the policy towards reactive (DQN's reason too).
- no value clipping by default (``clip_vloss``): the returns are hours of cost, not
  normalised, and clipping the value's move to ``clip_coef`` hours per update slows its fit.
- the gradient norm is clipped per network, not over both together: the value loss, in hours
  squared, would otherwise set the norm and shrink the actor's step with it.
- ``stride`` = 6 (hourly decisions in training, as REINFORCE): the greedy rule submits where
  p(submit) > 1/2, but a stochastic policy that stops near the right time spreads its stop
  over the decisions there, each with a smaller p the more decisions there are. At 30-min
  steps the greedy policy stayed reactive on real ls6 samples (8 nodes, 2 seeds) while the
  stochastic one halved its training cost; at hourly steps it cut held-out cost by half.
- ``ent_coef`` = 0.1 (CleanRL: 0.01; the reference's bonus for its policy gradient): at 0.01
  the actor stopped submitting within the first quarter of the run in 4 of 5 seeds on real ls6
  samples (8 nodes), its entropy reached 0, and a policy that never samples a submit gets no
  gradient to leave reactive again; at 0.03 4 of 5 seeds stayed reactive too, at 0.1 none
  (held-out cost 3.50 h against reactive 4.87; 0.2: 3.74). Stable-Baselines3's PPO has no
  bonus and does not stay reactive (docs/results-ls6.md, the cross-check); a likely reason,
  not measured: its one gradient-norm clip over both networks, set by the value loss in hours
  squared, keeps its actor's steps small.
- learning rate 3e-3 (CleanRL: 2.5e-4 for Atari): a rollout of 32 whole episodes holds about
  1,600 decisions, so a run has few updates; at 2.5e-4 and 1e-3 the policy had barely moved
  after 60,000 steps on the synthetic samples, at 1e-2 it collapsed to reactive.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch.distributions import Bernoulli

from mirage.outcomes import SampleSet
from mirage.policies.env import TableEpisodes
from mirage.policies.neural import (
    Costs, Monitor, TorchPolicy, adam, mlp, record_every, seed_everything, start_logit,
)
from mirage.policies.pg import PolicyGradient, roll_out


@dataclass(eq=False, repr=False)
class PPOConfig(Costs):
    """PPO's training settings, by CleanRL's names."""

    total_timesteps: int = 300_000  # environment steps of the run (decisions, forced included)
    num_envs: int = 32  # whole episodes rolled out together per update
    learning_rate: float = 3e-3  # Adam's step size (see above) ...
    anneal_lr: bool = True  # ... falling linearly to 0 over the run
    gamma: float = 1.0  # the discount (1, see above)
    gae_lambda: float = 0.95  # GAE's lambda
    num_minibatches: int = 8  # minibatches per pass over a rollout's decisions
    update_epochs: int = 4  # passes over a rollout's decisions
    norm_adv: bool = True  # standardise the advantages of each minibatch
    clip_coef: float = 0.2  # the surrogate's clipping of the probability ratio
    clip_vloss: bool = False  # clip the value's move too (see above)
    ent_coef: float = 0.1  # the entropy bonus's weight (see above)
    vf_coef: float = 0.5  # the value loss's weight
    max_grad_norm: float = 0.5  # the gradient norm, per network, clipped to this
    hidden: int = 64  # the MLPs' width
    stride: int = 6  # points between decisions in training (see above)


@dataclass
class Rollout:
    """The policy's own decisions of one rollout (forced submits left out), one row each, in
    order of decision step: episode, step, point row, action, and log p and value at the time."""

    episode: np.ndarray
    step: np.ndarray
    row: np.ndarray
    action: np.ndarray
    logprob: np.ndarray
    value: np.ndarray

    @classmethod
    def of(cls, parts: list[tuple]) -> "Rollout":
        """From one tuple of the fields' arrays per decision step (none: every episode was a
        single, forced point)."""
        if not parts:
            return cls(*(np.zeros(0, np.int64),) * 3, np.zeros(0, bool), np.zeros(0), np.zeros(0))
        return cls(*(np.concatenate(c) for c in zip(*parts)))


@dataclass(eq=False, repr=False)
class PPO(PPOConfig, TorchPolicy):
    family = "ppo"
    config_class = PPOConfig
    n_outputs = 1  # the submit logit

    # the submit logit; 0 is p(submit) = 1/2
    thresholds = PolicyGradient.thresholds

    def _train(self, train: SampleSet, seed: int, monitor: Monitor | None = None) -> None:
        cfg = self.config
        rng, gen = seed_everything(seed), torch.Generator().manual_seed(seed)
        ep = self._prepare(train)
        X = torch.from_numpy(ep.X).to(self.torch_device)
        actor = self.net_ = self._fresh_actor(ep)
        critic = mlp(ep.obs_dim, 1, cfg.hidden).to(self.torch_device)
        opt = adam(list(actor.parameters()) + list(critic.parameters()), cfg.learning_rate)

        t0 = time.perf_counter()
        self.history_ = []
        every = record_every(cfg.total_timesteps)
        env_steps, next_record, update = 0, 0, 0
        while env_steps < cfg.total_timesteps:
            if cfg.anneal_lr:
                frac = 1.0 - env_steps / cfg.total_timesteps
                opt.param_groups[0]["lr"] = frac * cfg.learning_rate
            idx = rng.integers(ep.n_samples, size=cfg.num_envs)
            ro, end_step, end_row = self._roll_out(actor, critic, X, ep, idx, gen)
            env_steps += int((end_step + 1).sum())
            adv = self._advantages(ro, ep, idx, end_step, end_row)
            stats = self._learn(actor, critic, opt, X, ro, adv, gen)
            if env_steps >= next_record:
                self.history_.append({"update": update, "env_steps": env_steps,
                                      "mean_episode_cost": float(ep.cost[end_row].mean()), **stats})
                next_record = (env_steps // every + 1) * every
                if monitor is not None:
                    monitor(env_steps, self)
            update += 1
        if monitor is not None:
            monitor(env_steps, self)
        self.train_seconds_ = time.perf_counter() - t0
        actor.eval()
        self.net_ = actor

    def _fresh_actor(self, ep: TableEpisodes):
        """The actor before training: it submits with p = 1/decisions at every decision
        (``neural.start_logit``); the small last layer (CleanRL's 0.01) makes that start the
        same in every state."""
        actor = self._build_net(ep.obs_dim)
        with torch.no_grad():
            actor[-1].weight.mul_(0.01)
            actor[-1].bias.fill_(start_logit(ep.decisions(self.stride)))
        return actor

    def _roll_out(self, actor, critic, X, ep: TableEpisodes, idx, gen):
        """``num_envs`` episodes of samples ``idx`` played out with the current actor."""
        dev = self.torch_device
        parts = []

        def choose(t, a_idx, rows, forced):
            act = np.zeros(len(a_idx), bool)
            chosen = ~forced  # a forced submit is not the policy's choice: nothing to learn
            if chosen.any():
                with torch.no_grad():
                    obs = X[rows[chosen]]
                    logits = actor(obs).squeeze(1)
                    u = torch.rand(len(logits), generator=gen).to(dev)
                    a = (u < torch.sigmoid(logits)).float()
                    logp = Bernoulli(logits=logits).log_prob(a)
                    v = critic(obs).squeeze(1)
                act[chosen] = a.cpu().numpy() > 0
                parts.append((a_idx[chosen], np.full(int(chosen.sum()), t), rows[chosen],
                              act[chosen], logp.cpu().numpy(), v.cpu().numpy()))
            return act

        end_step, end_row = roll_out(ep.starts[idx], ep.n[idx] - 1, self.stride, choose)
        return Rollout.of(parts), end_step, end_row

    def _advantages(self, ro: Rollout, ep: TableEpisodes, idx, end_step, end_row) -> np.ndarray:
        """GAE over each episode's decisions: the reward, -cost at the episode's end, comes at
        its last decision (a submit, or the wait a forced submit ends), after which the
        episode is over (no bootstrap)."""
        forced_end = end_row == ep.starts[idx] + ep.n[idx] - 1
        last = end_step - forced_end  # the step of each episode's last decision (-1: none)
        reward = -ep.cost[end_row]
        T, E = int(end_step.max()) + 1, len(idx)
        values = np.zeros((T + 1, E))  # 0 after an episode's last decision
        values[ro.step, ro.episode] = ro.value
        adv = np.zeros((T, E))
        lastgaelam = np.zeros(E)
        for t in reversed(range(T)):
            nonterminal = t < last
            r = np.where(t == last, reward, 0.0)
            delta = r + self.gamma * values[t + 1] * nonterminal - values[t]
            lastgaelam = delta + self.gamma * self.gae_lambda * nonterminal * lastgaelam
            adv[t] = lastgaelam
        return adv[ro.step, ro.episode]

    def _learn(self, actor, critic, opt, X, ro: Rollout, adv: np.ndarray, gen) -> dict:
        """``update_epochs`` passes of the clipped objective over the rollout's decisions."""
        cfg, dev = self.config, self.torch_device
        if len(ro.row) == 0:
            return {"entropy": np.nan, "approx_kl": np.nan, "clipfrac": np.nan}
        t = lambda a: torch.from_numpy(np.asarray(a, np.float32)).to(dev)  # noqa: E731
        b_obs, b_act = X[torch.from_numpy(ro.row).to(dev)], t(ro.action)
        b_logp, b_val, b_adv = t(ro.logprob), t(ro.value), t(adv)
        b_ret = b_adv + b_val
        stats = {"entropy": [], "approx_kl": [], "clipfrac": []}
        for _ in range(cfg.update_epochs):
            perm = torch.randperm(len(b_act), generator=gen).to(dev)
            for mb in torch.tensor_split(perm, min(cfg.num_minibatches, len(perm))):
                dist = Bernoulli(logits=actor(b_obs[mb]).squeeze(1))
                logratio = dist.log_prob(b_act[mb]) - b_logp[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    stats["approx_kl"].append(float(((ratio - 1) - logratio).mean()))
                    clipped = (ratio - 1).abs() > cfg.clip_coef
                    stats["clipfrac"].append(float(clipped.float().mean()))
                mb_adv = b_adv[mb]
                if cfg.norm_adv and len(mb) > 1:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                clipped_ratio = ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * clipped_ratio).mean()
                v_loss = self._value_loss(critic(b_obs[mb]).squeeze(1), b_val[mb], b_ret[mb])
                entropy = dist.entropy().mean()
                stats["entropy"].append(float(entropy.detach()))
                loss = pg_loss - cfg.ent_coef * entropy + cfg.vf_coef * v_loss
                opt.zero_grad()
                loss.backward()
                for net in (actor, critic):  # per network (see above)
                    torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
                opt.step()
        return {k: float(np.mean(v)) for k, v in stats.items()}

    def _value_loss(self, new: torch.Tensor, old: torch.Tensor, ret: torch.Tensor) -> torch.Tensor:
        if not self.clip_vloss:
            return 0.5 * F.mse_loss(new, ret)
        clipped = old + (new - old).clamp(-self.clip_coef, self.clip_coef)
        return 0.5 * torch.max((new - ret) ** 2, (clipped - ret) ** 2).mean()

    def decision_score(self, points) -> np.ndarray:
        return self._outputs(points).squeeze(1).numpy()
