"""The reference's neural value models over the 144 x 42 history window, and REINFORCE on top.

``transformer``: a value regressor of the outcome x (hours) of submitting now, read from the
last 24 h of cluster state (144 ten-minute steps of 42 numbers, ``SampleSet.history``):
each step's 42 standardised numbers are projected to ``width``, a learned positional
embedding over the 144 steps is added, a ``nn.TransformerEncoder`` (``layers`` layers,
``heads`` heads, batch_first, ``dropout`` 0 by default so a seeded fit repeats bit for bit)
reads the sequence, the steps are mean-pooled and a linear head gives x. With
``features="both"`` the point's standardised compact features (pred_* + f_*) are appended to
the pooled vector before the head. The reference used width 512; the default here is 32,
which fits a 2-core machine. Measured on one CPU thread (ls6 calibrated samples, 22 training
samples x 7 probes = 154 examples): width 32 takes 4 ms per example and epoch for the
transformer, 30 ms for the 10-expert mixture; width 512 (2 layers, 2 heads, feedforward 2048)
0.24-0.26 s and 3.5 s, and predicting one window 1.6 / 8 ms at width 32, 65-90 / 790 ms at
width 512. Width 512 needs a smaller ``learning_rate`` (1e-4: the default 1e-3 diverged).

``moe``: the reference's mixture of ``experts`` (10) such transformers, each with its own
encoder and head, weighted by a softmax gate on the pooled input (the window's mean over the
144 steps, plus the compact features with ``features="both"``).

Both submit once the predicted x is at least ``threshold`` (-0.5 h, the reference's rule);
``transformer_tuned`` / ``moe_tuned`` pick the threshold and the scheduler's veto by the
time-ordered cross-fit every tuned policy uses (``mirage.policies.tuning``); ``tune_every``
scores only every n-th sample of each held-out block, since scoring every decision point
costs these models more than their fits (docs/policies.md).

Training examples are ``points_per_sample`` (7, the reference's probes) random decision points
per training sample, drawn with the fit's seed; minibatches gather their windows from the
history array per batch (never every window at once: at the paper's sizes that is
points x 6048 floats). Targets are standardised by their training mean and spread; the loss
is the mean squared error; Adam (fused, see mirage.policies.neural.adam), gradient norm
clipped at ``grad_clip``.

``pg_transformer``: REINFORCE whose policy network is that transformer, initialised from a
fitted ``transformer`` value regressor (as the reference initialised its policy from the value
model): first the value regressor is fitted as above, then the submit logit is a linear map of
its pooled representation, initialised to ``init_scale * (predicted x - value_threshold)``,
so the untrained policy's greedy rule is the value rule ``predicted x > value_threshold``.
Episodes are the training samples, backed by the tables as in ``mirage.policies.pg`` (a
decision every ``stride`` points, reward -cost of the submit's outcome, a forced submit at the
predecessor's end gets no gradient), with a learned linear baseline on the (detached) pooled
representation and an entropy bonus. An update's episodes are rolled out without gradients
(the network does not change during a rollout); the chosen states are then scored again with
gradients in chunks, which is the same estimator with memory bounded by the chunk. The
decision is greedy: submit when the logit exceeds ``threshold`` (0: p(submit) > 1/2).

Predictions are batched per sample (``first_submit_all`` passes one sample's windows at once)
in chunks of ``predict_batch`` windows, under ``torch.no_grad()``.

Fitted policies save as one ``torch.save`` dict of plain tensors and values, readable with
``weights_only=True``, like the other torch policies (``TorchPolicy.save``), with the history
scaler and the target scaling added.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from mirage.outcomes import (
    STATE_WIDTH, WINDOW, SampleSet, compact_matrix, cost, history_windows,
)
from mirage.policies.baselines import vetoed
from mirage.policies.env import Scaler
from mirage.policies.neural import Costs, TorchPolicy, adam, record_every, seed_everything
from mirage.policies.pg import Reinforce, roll_out
from mirage.policies.tuning import best_threshold, cross_fit

FEATURE_MODES = ("history", "both")
#: windows per forward pass when predicting (one sample has ~300-450 points)
PREDICT_BATCH = 512


# ---------------------------------------------------------------------------- networks
class SequenceEncoder(nn.Module):
    """(B, 144, n_in) -> (B, width): projection, learned positions, encoder, mean pool."""

    def __init__(self, n_in: int, width: int, layers: int, heads: int, feedforward: int,
                 dropout: float, window: int = WINDOW):
        super().__init__()
        self.proj = nn.Linear(n_in, width)
        self.pos = nn.Parameter(torch.randn(window, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, heads, feedforward, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.encoder(self.proj(h) + self.pos).mean(dim=1)


class SequenceNet(nn.Module):
    """``experts`` encoders with a linear head each on [pooled, compact]; with several experts
    the output is their mixture under a softmax gate on [mean of the window, compact]."""

    def __init__(self, n_in: int, n_compact: int, width: int, layers: int, heads: int,
                 feedforward: int, dropout: float, experts: int = 1):
        super().__init__()
        self.encoders = nn.ModuleList([
            SequenceEncoder(n_in, width, layers, heads, feedforward, dropout)
            for _ in range(experts)])
        self.heads = nn.ModuleList([nn.Linear(width + n_compact, 1) for _ in range(experts)])
        self.gate = nn.Linear(n_in + n_compact, experts) if experts > 1 else None

    def features(self, h: torch.Tensor, c: torch.Tensor) -> list[torch.Tensor]:
        """Each expert's head input: its pooled representation with the compact features."""
        return [torch.cat([enc(h), c], dim=1) for enc in self.encoders]

    def gate_weights(self, h: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        if self.gate is None:
            return torch.ones(len(h), 1, device=h.device)
        return torch.softmax(self.gate(torch.cat([h.mean(dim=1), c], dim=1)), dim=1)

    def forward(self, h: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        outs = torch.cat([head(z) for head, z in zip(self.heads, self.features(h, c))], dim=1)
        if self.gate is None:
            return outs[:, 0]
        return (self.gate_weights(h, c) * outs).sum(dim=1)


# ---------------------------------------------------------------------------- settings
@dataclass(eq=False, repr=False)
class TransformerConfig(Costs):
    """The transformer value regressor's settings (see the module docstring)."""

    # the inputs, and the rule: submit once predicted x >= threshold (hours)
    features: str = "history"
    threshold: float = -0.5
    # training: points_per_sample probes per sample, epochs over them in minibatches
    points_per_sample: int = 7
    epochs: int = 30
    batch_size: int = 64
    # Adam's step size and weight decay, and the gradient norm's clip
    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    # the encoder; feedforward None: 4 x width (2048 at the reference's width 512)
    width: int = 32
    layers: int = 2
    heads: int = 2
    feedforward: int | None = None
    dropout: float = 0.0
    # windows per forward pass when predicting
    predict_batch: int = PREDICT_BATCH


@dataclass(eq=False, repr=False)
class MoEConfig(TransformerConfig):
    experts: int = 10


@dataclass(eq=False, repr=False)
class PGTransformerConfig(TransformerConfig, Reinforce):
    """The value regressor's settings, then REINFORCE's on top of it."""

    # submit when the logit > threshold (0: p(submit) > 1/2); the initial policy is the value
    # rule predicted x > value_threshold, at init_scale of logit per hour of predicted x
    threshold: float = 0.0
    value_threshold: float = -0.5
    init_scale: float = 1.0
    # updates, the policy's Adam step size, and states per gradient chunk of an update
    updates: int = 100
    pg_learning_rate: float = 1e-4
    chunk: int = 256


# ---------------------------------------------------------------------------- training data
class _Windows:
    """Where every point of a SampleSet finds its window in the set's history array, and a
    gather of a batch of windows (B, 144, 42), standardised, as a tensor."""

    def __init__(self, data: SampleSet, hist_scaler: Scaler, device):
        if data.history is None:
            raise ValueError("the sequence policies need the samples' history "
                             "(history.npz); regenerate the samples with it")
        pos = {int(s): i for i, s in enumerate(data.history_ids)}
        starts = data.point_starts()
        sids = data.points["sample_id"].to_numpy()[starts]
        k = data.points["k"].to_numpy().astype(np.int64)
        first_row = np.array([data.history_offsets[pos[int(s)]] for s in sids], np.int64)
        counts = np.diff(np.append(starts, len(data.points)))
        self.row = np.repeat(first_row, counts) + k  # history row of each point's window start
        self.history = data.history
        self.mean = torch.from_numpy(hist_scaler.mean).to(device)
        self.std = torch.from_numpy(hist_scaler.std).to(device)
        self.device = device
        self._steps = np.arange(WINDOW)

    def batch(self, point_rows: np.ndarray) -> torch.Tensor:
        h = self.history[self.row[point_rows][:, None] + self._steps]
        return _standardise(torch.from_numpy(np.asarray(h, np.float32)).to(self.device),
                            self.mean, self.std)


def _standardise(h: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    return torch.nan_to_num((h - mean) / std, nan=0.0, posinf=0.0, neginf=0.0)


def probe_rows(data: SampleSet, per: int, rng: np.random.Generator) -> np.ndarray:
    """``per`` random point rows of every sample (all of a shorter one), sorted per sample."""
    starts = data.point_starts()
    counts = np.diff(np.append(starts, len(data.points)))
    return np.concatenate([s + np.sort(rng.choice(n, size=min(per, n), replace=False))
                           for s, n in zip(starts, counts)])


# ---------------------------------------------------------------------------- the policy
@dataclass(eq=False, repr=False)
class TransformerValue(TransformerConfig, TorchPolicy):
    """Transformer value regressor of x over the history window (see the module docstring)."""

    #: with tune_threshold, score every tune_every-th sample of each held-out block
    tune_every: int = 1

    family = "transformer"
    needs_history = True
    config_class = TransformerConfig
    experts = 1
    strict = False  # submit at predicted x >= threshold, the reference's rule
    thresholds = np.round(np.arange(-8.0, 8.0 + 1e-9, 0.25), 4)  # tune_threshold's grid (h)

    def _check(self) -> None:
        if self.features not in FEATURE_MODES:
            raise ValueError(f"features must be one of {FEATURE_MODES}, not {self.features!r}")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")
        if int(self.tune_every) < 1:
            raise ValueError(f"tune_every must be a positive number of samples, "
                             f"not {self.tune_every}")

    # ---- construction ----------------------------------------------------------------------
    @property
    def n_compact(self) -> int:
        return len(self.scaler_.mean) if self.features == "both" else 0

    def _build_net(self, n_compact: int) -> SequenceNet:
        ff = self.feedforward or 4 * self.width
        return SequenceNet(STATE_WIDTH, n_compact, self.width, self.layers, self.heads, ff,
                           self.dropout, self.experts).to(self.torch_device)

    def _compact(self, points: pd.DataFrame) -> torch.Tensor:
        if self.features != "both":
            return torch.zeros(len(points), 0, device=self.torch_device)
        X = self.scaler_.transform(compact_matrix(points, self.feature_columns_))
        return torch.from_numpy(X).to(self.torch_device)

    # ---- training --------------------------------------------------------------------------
    def _prepare_scalers(self, train: SampleSet) -> _Windows:
        if train.history is None:
            raise ValueError(f"{self.name} needs the samples' history (history.npz)")
        self.feature_columns_ = list(train.feature_columns)
        self.scaler_ = Scaler.fit(compact_matrix(train.points, self.feature_columns_))
        self.hist_scaler_ = Scaler.fit(train.history)
        return _Windows(train, self.hist_scaler_, self.torch_device)

    def _fit_value(self, train: SampleSet, rng: np.random.Generator, win: _Windows) -> SequenceNet:
        """Fit the value regressor on ``points_per_sample`` probes per sample (sets y_mean_,
        y_std_ and the value part of history_)."""
        cfg = self.config
        rows = probe_rows(train, cfg.points_per_sample, rng)
        y = train.points["x_h"].to_numpy(dtype=np.float64)[rows]
        self.y_mean_ = float(y.mean())
        self.y_std_ = float(y.std()) if y.std() > 1e-8 else 1.0
        Y = torch.from_numpy(((y - self.y_mean_) / self.y_std_).astype(np.float32)).to(self.torch_device)
        C = self._compact(train.points.iloc[rows])
        net = self._build_net(C.shape[1])
        net.train()
        opt = adam(net.parameters(), cfg.learning_rate)
        if cfg.weight_decay:
            for g in opt.param_groups:
                g["weight_decay"] = cfg.weight_decay
        for epoch in range(cfg.epochs):
            order = rng.permutation(len(rows))
            total = 0.0
            for b in range(0, len(rows), cfg.batch_size):
                idx = order[b:b + cfg.batch_size]
                t_idx = torch.from_numpy(idx).to(self.torch_device)
                loss = F.mse_loss(net(win.batch(rows[idx]), C[t_idx]), Y[t_idx])
                opt.zero_grad()
                loss.backward()
                if cfg.grad_clip:
                    nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip)
                opt.step()
                total += float(loss.detach()) * len(idx)
            mse = total / len(rows)
            self.history_.append({"phase": "value", "epoch": epoch, "loss": mse,
                                  "rmse_h": math.sqrt(mse) * self.y_std_})
        net.eval()
        return net

    def _train(self, train: SampleSet, seed: int) -> None:
        rng = seed_everything(seed)
        self.history_ = []
        t0 = time.perf_counter()
        win = self._prepare_scalers(train)
        self.net_ = self._fit_value(train, rng, win)
        self.train_seconds_ = time.perf_counter() - t0
        self.device_ = str(self.torch_device)

    def fit(self, train: SampleSet, seed: int = 0, final_from: "TransformerValue | None" = None):
        """Train on ``train``; with ``tune_threshold`` the threshold (and the plan veto) first,
        by time-ordered cross-fitting. ``final_from``: the untuned twin fitted on the same
        samples with the same seed and settings (Entry.tunes in the catalogue), whose network
        is this one's final network."""
        self._check()
        self._set_threads()
        if self.tune_threshold:
            def fit_score(fit_part, held):
                self._train(fit_part, seed)
                return self.predict_all(held)

            c_I, c_O = self.c_I, self.c_O
            blocks = cross_fit(train, self.n_blocks, fit_score, c_I, c_O,
                               every=int(self.tune_every))
            self.threshold_, self.gate_, self.threshold_sweep_ = best_threshold(
                blocks, self.thresholds, c_I, c_O, strict=self.strict)
        else:
            self.threshold_, self.gate_, self.threshold_sweep_ = (
                float(self.threshold), False, None)
        if final_from is not None:
            if (getattr(final_from, "feature_columns_", None) != list(train.feature_columns)
                    or getattr(final_from, "net_", None) is None):
                raise ValueError("final_from was not trained on these samples")
            for attr in ("feature_columns_", "scaler_", "hist_scaler_", "net_", "y_mean_",
                         "y_std_", "train_seconds_", "device_"):
                setattr(self, attr, getattr(final_from, attr))
            self.history_ = list(final_from.history_)
        else:
            self._train(train, seed)
        return self

    # ---- decisions -------------------------------------------------------------------------
    def _check_fitted(self):
        if getattr(self, "net_", None) is None:
            raise RuntimeError(f"{self.name} is not fitted; call fit() first")

    def _forward(self, points: pd.DataFrame, windows: np.ndarray) -> np.ndarray:
        """The network's raw output for each row of ``points`` with its window."""
        self._check_fitted()
        if windows is None:
            raise ValueError(f"policy {self.name} needs the 144x42 history windows")
        if len(windows) != len(points):
            raise ValueError(f"{len(windows)} windows for {len(points)} points")
        mean = torch.from_numpy(self.hist_scaler_.mean).to(self.torch_device)
        std = torch.from_numpy(self.hist_scaler_.std).to(self.torch_device)
        C = self._compact(points)
        step = int(self.predict_batch)
        out = []
        with torch.no_grad():
            for b in range(0, len(points), step):
                h = torch.from_numpy(np.array(windows[b:b + step], dtype=np.float32))  # a copy
                h = _standardise(h.to(self.torch_device), mean, std)
                out.append(self.net_(h, C[b:b + step]).cpu())
        return torch.cat(out).numpy().astype(np.float64) if out else np.zeros(0)

    def predict(self, points: pd.DataFrame, windows: np.ndarray) -> np.ndarray:
        """Predicted x (hours) of submitting at each point."""
        return self.y_mean_ + self.y_std_ * self._forward(points, windows)

    def decision_score(self, points: pd.DataFrame, windows: np.ndarray = None) -> np.ndarray:
        return self.predict(points, windows)

    def predict_all(self, data: SampleSet) -> np.ndarray:
        """decision_score of every point of ``data`` (in points order), one sample at a time."""
        out = []
        for sid, sp in data.points.groupby("sample_id", sort=True):
            out.append(self.decision_score(sp, history_windows(data.history_for(sid), len(sp))))
        return np.concatenate(out) if out else np.zeros(0)

    def submit_mask(self, points, windows=None):
        score = self.decision_score(points, windows)
        hit = score > self.threshold_ if self.strict else score >= self.threshold_
        return vetoed(hit, points, self.gate_)

    # ---- persistence -----------------------------------------------------------------------
    def _extra_state(self) -> dict:
        return {"hist_mean": torch.from_numpy(self.hist_scaler_.mean),
                "hist_std": torch.from_numpy(self.hist_scaler_.std),
                "y_mean": float(self.y_mean_), "y_std": float(self.y_std_),
                "train_seconds": self.train_seconds_, "device": self.device_}

    def _restore(self, blob: dict) -> None:
        self.hist_scaler_ = Scaler(blob["hist_mean"].numpy(), blob["hist_std"].numpy())
        self.y_mean_, self.y_std_ = float(blob["y_mean"]), float(blob["y_std"])
        self.train_seconds_, self.device_ = blob.get("train_seconds"), blob.get("device")

    def _net_inputs(self) -> int:
        return self.n_compact


@dataclass(eq=False, repr=False)
class MoEValue(MoEConfig, TransformerValue):
    """The reference's mixture of ``experts`` transformer value regressors, softmax-gated."""

    family = "moe"
    config_class = MoEConfig


@dataclass(eq=False, repr=False)
class PGTransformer(PGTransformerConfig, TransformerValue):
    """REINFORCE on a transformer policy initialised from a fitted transformer value regressor
    (see the module docstring); greedy: submit when the logit > ``threshold``."""

    family = "pg_transformer"
    config_class = PGTransformerConfig
    strict = True
    thresholds = np.round(np.arange(-8.0, 8.0 + 1e-9, 0.25), 4)

    def _train(self, train: SampleSet, seed: int) -> None:
        cfg = self.config
        rng = seed_everything(seed)
        self.history_ = []
        t0 = time.perf_counter()
        win = self._prepare_scalers(train)
        net = self._fit_value(train, rng, win)
        dev = self.torch_device

        # the submit logit: init_scale * (predicted x - value_threshold), a linear map of the
        # value model's pooled representation
        head = net.heads[0]
        with torch.no_grad():
            head.weight.mul_(cfg.init_scale * self.y_std_)
            head.bias.copy_(cfg.init_scale * (self.y_std_ * head.bias + self.y_mean_
                                              - cfg.value_threshold))
        self.y_mean_, self.y_std_ = 0.0, 1.0  # the output is now the logit itself
        baseline = nn.Linear(head.in_features, 1).to(dev)
        with torch.no_grad():
            baseline.weight.zero_()
        opt = adam(list(net.parameters()) + list(baseline.parameters()), cfg.pg_learning_rate)
        gen = torch.Generator().manual_seed(seed)

        starts = train.point_starts()
        n = np.diff(np.append(starts, len(train.points)))
        step_cost = cost(train.points["x_h"].to_numpy(dtype=np.float64), cfg.c_I, cfg.c_O)
        C_all = self._compact(train.points)
        every = record_every(cfg.updates)
        for update in range(cfg.updates):
            # ---- roll out the episodes together, without gradients
            net.eval()
            idx = rng.integers(len(starts), size=cfg.episodes_per_update)
            s_rows, s_act, s_ep, s_t = [], [], [], []

            def choose(t, a_idx, rows, forced):
                with torch.no_grad():
                    r_t = torch.from_numpy(rows).to(dev)
                    p = torch.sigmoid(net(win.batch(rows), C_all[r_t])).cpu()
                act = (torch.rand(len(a_idx), generator=gen) < p).numpy()
                chosen = ~forced  # a forced submit is not the policy's choice: no gradient
                s_rows.append(rows[chosen])
                s_act.append(act[chosen])
                s_ep.append(a_idx[chosen])
                s_t.append(np.full(int(chosen.sum()), t))
                return act

            end_step, end_row = roll_out(starts[idx], n[idx] - 1, cfg.stride, choose)
            reward = -step_cost[end_row]
            rows, act = np.concatenate(s_rows), np.concatenate(s_act)
            ep, ts = np.concatenate(s_ep), np.concatenate(s_t)
            if not len(rows):
                continue
            G_all = (cfg.gamma ** (end_step[ep] - ts)) * reward[ep]
            # ---- the same states again, with gradients, chunk by chunk
            net.train()
            opt.zero_grad()
            ent_sum = 0.0
            for b in range(0, len(rows), cfg.chunk):
                sl = slice(b, b + cfg.chunk)
                r_t = torch.from_numpy(rows[sl]).to(dev)
                h, c = win.batch(rows[sl]), C_all[r_t]
                z = net.features(h, c)[0]
                logits = net.heads[0](z).squeeze(1)
                v = baseline(z.detach()).squeeze(1)
                a_t = torch.from_numpy(act[sl].astype(np.float32)).to(dev)
                G = torch.from_numpy(G_all[sl]).to(dev, torch.float32)
                logp = -F.binary_cross_entropy_with_logits(logits, a_t, reduction="none")
                pc = torch.sigmoid(logits).clamp(1e-6, 1 - 1e-6)
                ent = -(pc * pc.log() + (1 - pc) * (1 - pc).log())
                adv = (G - v).detach()
                loss = (-(logp * adv).sum() - cfg.ent_coef * ent.sum()
                        + cfg.value_coef * ((v - G) ** 2).sum()) / len(rows)
                loss.backward()
                ent_sum += float(ent.detach().sum())
            if cfg.grad_clip:
                nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip)
            opt.step()
            if update % every == 0:
                self.history_.append({"phase": "pg", "update": update,
                                      "mean_episode_cost": float(-reward.mean()),
                                      "entropy": ent_sum / len(rows)})
        net.eval()
        self.net_ = net
        self.train_seconds_ = time.perf_counter() - t0
        self.device_ = str(self.torch_device)

    def submit_probability(self, points, windows) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.decision_score(points, windows)))
