"""Shared plumbing of the torch policies (DQN, policy gradient): features, MLP, decision
threshold, persistence.

Each torch policy turns its network into one decision score per point (DQN: Q(submit) -
Q(wait); policy gradient: the submit logit) and submits when the score exceeds ``threshold_``:
0 is the greedy rule. ``tune_threshold=True`` picks the threshold by time-ordered
cross-fitting on the training samples (``mirage.policies.tuning``), the same way the
regressors and the quantile lead pick theirs.

Fitted torch policies are saved as one ``torch.save`` dict of plain tensors and Python values
(parameters, feature names, scaler, state_dict) so ``torch.load(weights_only=True)`` can read
them: a pickle of the whole object would tie saved files to this module's class layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from mirage.policies.base import Policy, derived_name
from mirage.outcomes import SampleSet, compact_matrix
from mirage.policies.env import Scaler, TableEpisodes
from mirage.policies.baselines import vetoed
from mirage.policies.tuning import best_threshold, cross_fit


def mlp(n_in: int, n_out: int, hidden: int = 64, layers: int = 2) -> nn.Sequential:
    mods, width = [], n_in
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    mods.append(nn.Linear(width, n_out))
    return nn.Sequential(*mods)


def direct_forward(net: nn.Sequential):
    """``net``'s forward pass as a plain function of its layers' own tensors (no module calls):
    the same operations on the same parameters, so the same numbers, in about 60 % of the time
    for one observation, the case of a DQN's greedy step (80,000 of them a fit). The parameters
    are read when called, so an optimizer's in-place updates are seen."""
    ops = []
    for m in net:
        if isinstance(m, nn.Linear):
            ops.append((m.weight, m.bias))
        elif isinstance(m, nn.ReLU):
            ops.append(None)
        else:
            raise TypeError(f"direct_forward knows Linear and ReLU layers, not {type(m).__name__}")

    def forward(x: torch.Tensor) -> torch.Tensor:
        for op in ops:
            x = torch.relu(x) if op is None else F.linear(x, op[0], op[1])
        return x

    return forward


#: about how many points of a fit's training curve ``history_`` keeps (DQN, policy gradient);
#: recording only reads the training state, so it changes no decision
HISTORY_POINTS = 60


#: ``monitor(env_steps, policy)``: follows a reinforcement-learning fit (see TorchPolicy._train)
Monitor = Callable[[int, "TorchPolicy"], None]


def start_logit(decisions) -> float:
    """A fresh policy gradient's submit logit (its output bias): log(1 / the mean decisions
    per episode), at least 2 decisions. It submits with p = 1/decisions at every decision, so
    its episodes stop at a roughly uniform decision; at p = 1/2 nearly every episode would end
    in its first few decisions and the predecessor's last hours, where the decision matters,
    would go unseen. ``decisions``: each training episode's decisions when it waits to its end."""
    return -math.log(max(2.0, float(np.mean(decisions))))


def record_every(total: int) -> int:
    """The interval, in steps or updates, of ``history_`` over a fit of ``total`` of them."""
    return max(1, int(total) // HISTORY_POINTS)


def adam(params, lr: float) -> torch.optim.Optimizer:
    """Adam with torch's fused kernel: the same step on every CPU. The default kernel divides
    by MKL's vector sqrt, whose last bits depend on the CPU (see mirage.policies)."""
    return torch.optim.Adam(params, lr=lr, fused=True)


@dataclass(eq=False, repr=False)
class Costs:
    """The costs every torch policy trains on: of an hour of interruption, of an hour of
    overlap. The base of each policy's training settings."""

    c_I: float = 1.0
    c_O: float = 0.5


def seed_everything(seed: int) -> np.random.Generator:
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


@dataclass(eq=False, repr=False)
class TorchPolicy(Policy):
    """Base of policies that score standardised compact features with an MLP.

    A subclass is a dataclass whose first base is its training settings' dataclass
    (``config_class``, declared with eq=False and repr=False so that a policy compares by
    identity and prints as a Policy), so its constructor takes every training setting and
    these four and keeps each unchanged as an attribute of its name (scikit-learn's
    convention). The settings come first so that a subclass's defaults win over its parent
    policy's (pg_transformer's threshold 0 over the transformer's -0.5)."""

    device: str = "cpu"
    threads: int | None = 1
    tune_threshold: bool = False
    n_blocks: int = 4
    # fit() sets feature_columns_, scaler_, net_, train_seconds_, history_, threshold_,
    # threshold_sweep_ and gate_ (the scheduler's veto, baselines.plan_allows)

    n_outputs = 2
    #: candidates for tune_threshold, set per policy
    thresholds = np.zeros(1)
    #: the training settings' dataclass, set per policy
    config_class = None
    #: the policy's name without ``_tuned``, set per policy
    family = "torch"
    name = derived_name(lambda self: self.family + ("_tuned" if self.tune_threshold else ""))

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.device)

    def _set_threads(self):
        if self.threads:
            torch.set_num_threads(int(self.threads))

    def _prepare(self, train: SampleSet) -> TableEpisodes:
        self.feature_columns_ = train.feature_columns
        self.scaler_ = Scaler.fit(compact_matrix(train.points, self.feature_columns_))
        return TableEpisodes(train, self.feature_columns_, self.scaler_, self.c_I, self.c_O)

    def _build_net(self, n_in: int) -> nn.Module:
        return mlp(n_in, self.n_outputs, self.hidden).to(self.torch_device)

    # ---- training and decisions ------------------------------------------------------------
    @property
    def config(self):
        """The training settings as their dataclass."""
        fields = self.config_class.__dataclass_fields__
        return self.config_class(**{k: getattr(self, k) for k in fields})

    def _train(self, train: SampleSet, seed: int, monitor: "Monitor | None" = None) -> None:
        """Fit the network on ``train`` (sets feature_columns_, scaler_, net_, history_).

        ``monitor``: called as ``monitor(env_steps, self)`` at every point of ``history_`` and
        once at the end, with ``self.net_`` the network being trained (mirage.policies.curves
        scores held-out samples with it); it reads the training state only, so it changes no
        decision."""
        raise NotImplementedError

    def decision_score(self, points) -> np.ndarray:
        raise NotImplementedError

    def fit(self, train: SampleSet, seed: int = 0, final_from: "TorchPolicy | None" = None,
            monitor: "Monitor | None" = None):
        """Train on ``train``; with ``tune_threshold`` the threshold first, by cross-fitting.

        ``final_from``: the same policy already trained on the same ``train`` with the same seed
        and settings (the untuned one of this tuned policy, Entry.tunes in the catalogue): its
        network is this one's final network, the very one ``_train(train, seed)`` would train
        again (a seeded fit is repeatable bit for bit).

        ``monitor``: follows the final training (see ``_train``); reinforcement-learning
        policies only.
        """
        self._set_threads()
        if self.tune_threshold:
            def fit_score(fit_part, held):
                self._train(fit_part, seed)
                return self.decision_score(held.points)

            c_I, c_O = self.c_I, self.c_O
            blocks = cross_fit(train, self.n_blocks, fit_score, c_I, c_O)
            self.threshold_, self.gate_, self.threshold_sweep_ = best_threshold(
                blocks, self.thresholds, c_I, c_O, strict=True)
        else:
            self.threshold_, self.gate_, self.threshold_sweep_ = 0.0, False, None
        if final_from is not None:
            if (getattr(final_from, "feature_columns_", None) != train.feature_columns
                    or getattr(final_from, "net_", None) is None):
                raise ValueError("final_from was not trained on these samples")
            self.feature_columns_ = list(final_from.feature_columns_)
            self.scaler_ = final_from.scaler_
            self.net_ = final_from.net_
            self.history_ = list(getattr(final_from, "history_", []))
            self.train_seconds_ = getattr(final_from, "train_seconds_", None)
        elif monitor is not None:
            self._train(train, seed, monitor=monitor)
        else:
            self._train(train, seed)
        return self

    def submit_mask(self, points, windows=None):
        return vetoed(self.decision_score(points) > self.threshold_, points, self.gate_)

    def _outputs(self, points) -> torch.Tensor:
        if getattr(self, "net_", None) is None:
            raise RuntimeError(f"{self.name} is not fitted; call fit() first")
        X = self.scaler_.transform(compact_matrix(points, self.feature_columns_))
        with torch.no_grad():
            return self.net_(torch.from_numpy(X).to(self.torch_device)).cpu()

    # ---- persistence -----------------------------------------------------------------------
    def _extra_state(self) -> dict:
        """What a subclass saves beyond the common fields (plain tensors and values)."""
        return {}

    def _restore(self, blob: dict) -> None:
        """Set a subclass's fitted attributes from ``_extra_state``'s fields."""

    def _net_inputs(self) -> int:
        """The argument ``_build_net`` rebuilds the saved network with."""
        return len(self.scaler_.mean)

    def save(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"policy": self.name, "params": self.get_params(),
                    "feature_columns": list(self.feature_columns_),
                    "threshold": float(self.threshold_), "gate": bool(self.gate_),
                    "mean": torch.from_numpy(self.scaler_.mean),
                    "std": torch.from_numpy(self.scaler_.std),
                    **self._extra_state(),
                    "state_dict": {k: v.cpu() for k, v in self.net_.state_dict().items()}},
                   path)
        return path

    @classmethod
    def load(cls, path, device: str | None = None) -> "TorchPolicy":
        blob = torch.load(path, map_location="cpu", weights_only=True)
        params = dict(blob["params"])
        if device is not None:
            params["device"] = device
        obj = cls(**params)
        obj.name = blob["policy"]
        obj.feature_columns_ = list(blob["feature_columns"])
        obj.scaler_ = Scaler(blob["mean"].numpy(), blob["std"].numpy())
        obj.threshold_ = float(blob.get("threshold", 0.0))
        obj.gate_ = bool(blob.get("gate", False))  # files saved before the veto existed
        obj.threshold_sweep_ = None
        obj.history_, obj.train_seconds_ = [], None  # the training curve is in training.csv
        obj._restore(blob)
        obj.net_ = obj._build_net(obj._net_inputs())
        obj.net_.load_state_dict(blob["state_dict"])
        obj.net_.eval()
        return obj
