"""Shared plumbing of the torch policies (DQN, policy gradient): features, MLP, persistence.

Fitted torch policies are saved as one ``torch.save`` dict of plain tensors and Python values
(parameters, feature names, scaler, state_dict) so ``torch.load(weights_only=True)`` can read
them: a pickle of the whole object would tie saved files to this module's class layout.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from mirage.policies.base import Policy
from mirage.policies.data import SampleSet, compact_matrix
from mirage.policies.env import Scaler, TableEpisodes


def mlp(n_in: int, n_out: int, hidden: int = 64, layers: int = 2) -> nn.Sequential:
    mods, width = [], n_in
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    mods.append(nn.Linear(width, n_out))
    return nn.Sequential(*mods)


def seed_everything(seed: int) -> np.random.Generator:
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


class TorchPolicy(Policy):
    """Base of policies that score standardised compact features with an MLP."""

    n_outputs = 2

    def __init__(self, device: str = "cpu", threads: int | None = 1, **params):
        self.params = dict(params, device=device, threads=threads)
        self.feature_columns_: list[str] | None = None
        self.scaler_: Scaler | None = None
        self.net_: nn.Module | None = None
        self.train_seconds_: float | None = None
        self.history_: list[dict] = []

    @property
    def device(self) -> torch.device:
        return torch.device(self.params["device"])

    def _set_threads(self):
        if self.params.get("threads"):
            torch.set_num_threads(int(self.params["threads"]))

    def _prepare(self, train: SampleSet) -> TableEpisodes:
        self.feature_columns_ = train.feature_columns
        self.scaler_ = Scaler.fit(compact_matrix(train.points, self.feature_columns_))
        return TableEpisodes(train, self.feature_columns_, self.scaler_,
                             self.params.get("c_I", 1.0), self.params.get("c_O", 0.5))

    def _build_net(self, n_in: int) -> nn.Module:
        return mlp(n_in, self.n_outputs, self.params.get("hidden", 64)).to(self.device)

    def _outputs(self, points) -> torch.Tensor:
        if self.net_ is None:
            raise RuntimeError(f"{self.name} is not fitted; call fit() first")
        X = self.scaler_.transform(compact_matrix(points, self.feature_columns_))
        with torch.no_grad():
            return self.net_(torch.from_numpy(X).to(self.device)).cpu()

    # ---- persistence -----------------------------------------------------------------------
    def save(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"policy": self.name, "params": self.params,
                    "feature_columns": list(self.feature_columns_),
                    "mean": torch.from_numpy(self.scaler_.mean),
                    "std": torch.from_numpy(self.scaler_.std),
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
        obj.feature_columns_ = list(blob["feature_columns"])
        obj.scaler_ = Scaler(blob["mean"].numpy(), blob["std"].numpy())
        obj.net_ = obj._build_net(len(obj.scaler_.mean))
        obj.net_.load_state_dict(blob["state_dict"])
        obj.net_.eval()
        return obj
