"""Deep Q-Network on the sample tables, CleanRL-style (one readable training loop).

Decisions: Q(s, wait) and Q(s, submit) from an MLP on the standardised compact features;
greedy at decision time (submit when Q(s, submit) > Q(s, wait)).

Departures from textbook DQN, each for a reason:
- ``stride`` = 3 (30 min) in training: the value of waiting must travel back one step per
  target update, and from the last hours of a 300-point episode that was too slow at 10-min
  steps (the greedy policy stayed reactive). Decisions are still taken at every point.
- gamma = 1: the only reward is the terminal -cost, so discounting would only make a late
  submission look cheaper than it is.
- the random action of epsilon-greedy submits with probability 1/(steps left) instead of 1/2,
  so a random episode stops at a uniformly drawn point; with 1/2 every episode would end in
  its first few steps (~300 steps per sample) and the states near the predecessor's end, the
  ones that matter, would never be explored.
- ``counterfactual_submits``: every waiting step also stores the submit transition of the
  same state, whose reward the table knows. Without it only ~1 in (steps left) explored
  transitions is a submit and Q(s, submit), the anchor of every bootstrap target, stays noisy.
- double DQN targets (the online net picks the next action, the target net values it): with
  ~300 undiscounted steps per episode the plain max target's overestimation compounds until
  waiting looks better than submitting everywhere and the greedy policy is reactive.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from mirage.outcomes import SampleSet
from mirage.policies.env import ProvisioningEnv
from mirage.policies.neural import (
    Costs, Monitor, TorchPolicy, adam, direct_forward, record_every, seed_everything,
)


@dataclass(eq=False, repr=False)
class DQNConfig(Costs):
    """DQN's training settings, by CleanRL's names."""

    total_timesteps: int = 120_000  # environment steps of the run
    buffer_size: int = 100_000  # transitions the replay buffer keeps
    learning_rate: float = 1e-3  # Adam's step size
    batch_size: int = 256  # transitions per minibatch
    gamma: float = 1.0  # the discount (1, see above)
    target_network_frequency: int = 500  # steps between copies of the online net to the target
    start_e: float = 1.0  # epsilon-greedy's epsilon at the start ...
    end_e: float = 0.05  # ... and at the end of its fall,
    exploration_fraction: float = 0.5  # ... which lasts this share of the run
    learning_starts: int = 5000  # steps before the first update
    train_frequency: int = 4  # steps between updates
    hidden: int = 64  # the MLP's width
    stride: int = 3  # points between decisions in training (see above)
    counterfactual_submits: bool = True  # store the submit transition of each waiting step


class ReplayBuffer:
    def __init__(self, size: int, obs_dim: int):
        self.obs = np.zeros((size, obs_dim), np.float32)
        self.next_obs = np.zeros((size, obs_dim), np.float32)
        self.actions = np.zeros(size, np.int64)
        self.rewards = np.zeros(size, np.float32)
        self.dones = np.zeros(size, np.float32)
        self.size, self.pos, self.full = size, 0, False

    def add(self, obs, next_obs, action, reward, done):
        i = self.pos
        self.obs[i], self.next_obs[i] = obs, next_obs
        self.actions[i], self.rewards[i], self.dones[i] = action, reward, done
        self.pos = (i + 1) % self.size
        self.full = self.full or self.pos == 0

    def sample(self, n: int, rng: np.random.Generator, device):
        idx = rng.integers(self.size if self.full else self.pos, size=n)
        t = lambda a: torch.from_numpy(a[idx]).to(device)  # noqa: E731
        return t(self.obs), t(self.next_obs), t(self.actions), t(self.rewards), t(self.dones)


def linear_schedule(start_e: float, end_e: float, duration: float, t: int) -> float:
    slope = (end_e - start_e) / max(duration, 1)
    return max(slope * t + start_e, end_e)


@dataclass(eq=False, repr=False)
class DQN(DQNConfig, TorchPolicy):
    family = "dqn"
    config_class = DQNConfig

    # Q(submit) - Q(wait) in hours of cost
    thresholds = np.round(np.arange(-3.0, 3.0 + 1e-9, 0.05), 4)

    def _train(self, train: SampleSet, seed: int, monitor: Monitor | None = None) -> None:
        cfg = self.config
        rng = seed_everything(seed)
        episodes = self._prepare(train)
        env = ProvisioningEnv(episodes, stride=cfg.stride)
        env.action_space.seed(seed)

        q_net = self.net_ = self._build_net(episodes.obs_dim)
        target = self._build_net(episodes.obs_dim)
        # the nets' forward passes as plain functions (the same numbers, less time per call)
        q_of, target_of = direct_forward(q_net), direct_forward(target)
        target.load_state_dict(q_net.state_dict())
        opt = adam(q_net.parameters(), cfg.learning_rate)
        rb = ReplayBuffer(cfg.buffer_size, episodes.obs_dim)

        t0 = time.perf_counter()
        self.history_ = []
        every = record_every(cfg.total_timesteps)
        obs, _ = env.reset(seed=seed)
        ep_costs = []
        for step in range(cfg.total_timesteps):
            eps = linear_schedule(cfg.start_e, cfg.end_e,
                                  cfg.exploration_fraction * cfg.total_timesteps, step)
            if rng.random() < eps:
                action = int(rng.random() < 1.0 / env.steps_left)
            else:
                with torch.no_grad():
                    q = q_of(torch.from_numpy(obs).to(self.torch_device))
                action = int(q.argmax().item())
            if cfg.counterfactual_submits and action == 0:
                rb.add(obs, obs, 1, env.submit_reward(), 1.0)
            next_obs, reward, done, _, info = env.step(action)
            rb.add(obs, next_obs, action, reward, float(done))
            if done:
                ep_costs.append(-reward)
                obs, _ = env.reset()
            else:
                obs = next_obs

            if step >= cfg.learning_starts and step % cfg.train_frequency == 0:
                b_obs, b_next, b_act, b_rew, b_done = rb.sample(cfg.batch_size, rng,
                                                                self.torch_device)
                with torch.no_grad():
                    next_a = q_of(b_next).argmax(dim=1, keepdim=True)
                    target_max = target_of(b_next).gather(1, next_a).squeeze(1)
                    td_target = b_rew + cfg.gamma * target_max * (1.0 - b_done)
                old_val = q_of(b_obs).gather(1, b_act[:, None]).squeeze(1)
                loss = F.mse_loss(old_val, td_target)
                opt.zero_grad()
                loss.backward()
                opt.step()
            if step % cfg.target_network_frequency == 0:
                target.load_state_dict(q_net.state_dict())
            if step % every == 0 and ep_costs:
                self.history_.append({"step": step, "epsilon": eps,
                                      "mean_episode_cost": float(np.mean(ep_costs[-200:]))})
            if monitor is not None and step % every == 0:
                monitor(step, self)
        if monitor is not None:
            monitor(cfg.total_timesteps, self)
        self.train_seconds_ = time.perf_counter() - t0
        q_net.eval()
        self.net_ = q_net

    def q_values(self, points) -> np.ndarray:
        return self._outputs(points).numpy()

    def decision_score(self, points) -> np.ndarray:
        q = self.q_values(points)
        return q[:, 1] - q[:, 0]
