"""Names -> policy constructors, so evaluation and the workflow treat every policy alike."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import joblib

from mirage.policies import TORCH_POLICY_NAMES
from mirage.policies.base import Policy
from mirage.policies.baselines import Average, FixedLead, PlanLead, Reactive
from mirage.policies.oracle import Oracle
from mirage.policies.quantile import QuantileLead
from mirage.policies.service import ServiceLevel
from mirage.policies.trees import RegressorPolicy

# The torch policies' classes are imported on first use: importing torch costs a process about
# 2 s, which a fit of the other policies (or `mirage evaluate` of them) need not pay. The imports
# are written out in functions so that mirage.fingerprint still sees them.
def _dqn():
    from mirage.policies.dqn import DQN

    return DQN


def _pg():
    from mirage.policies.pg import PolicyGradient

    return PolicyGradient


def _sequence(cls: str):
    def load():
        from mirage.policies import sequence

        return getattr(sequence, cls)

    return load


_TORCH_CLASSES = {"dqn": _dqn, "dqn_tuned": _dqn, "pg": _pg, "pg_tuned": _pg,
                  "transformer": _sequence("TransformerValue"),
                  "transformer_tuned": _sequence("TransformerValue"),
                  "moe": _sequence("MoEValue"), "moe_tuned": _sequence("MoEValue"),
                  "pg_transformer": _sequence("PGTransformer")}


class _TorchClasses(Mapping):
    """Torch policy name -> class, importing the class's module (and torch) when asked."""

    def __getitem__(self, name):
        return _TORCH_CLASSES[name]()

    def __iter__(self):
        return iter(_TORCH_CLASSES)

    def __len__(self):
        return len(_TORCH_CLASSES)


TORCH_POLICIES: Mapping = _TorchClasses()


def _torch(name: str, **fixed):
    return lambda **p: TORCH_POLICIES[name](**fixed, **p)


_FACTORIES = {
    "reactive": Reactive,
    "average": Average,
    "fixed_lead": FixedLead,
    "plan_lead": PlanLead,
    "quantile": QuantileLead,
    "service_level": ServiceLevel,
    "rf": lambda **p: RegressorPolicy(kind="rf", **p),
    "rf_tuned": lambda **p: RegressorPolicy(kind="rf", tune_threshold=True, **p),
    "xgb": lambda **p: RegressorPolicy(kind="xgb", **p),
    "xgb_tuned": lambda **p: RegressorPolicy(kind="xgb", tune_threshold=True, **p),
    "dqn": _torch("dqn"),
    "dqn_tuned": _torch("dqn_tuned", tune_threshold=True),
    "pg": _torch("pg"),
    "pg_tuned": _torch("pg_tuned", tune_threshold=True),
    "transformer": _torch("transformer"),
    "transformer_tuned": _torch("transformer_tuned", tune_threshold=True),
    "moe": _torch("moe"),
    "moe_tuned": _torch("moe_tuned", tune_threshold=True),
    "pg_transformer": _torch("pg_transformer"),
    "oracle": Oracle,
}
POLICIES: tuple[str, ...] = tuple(_FACTORIES)
assert set(TORCH_POLICIES) == TORCH_POLICY_NAMES, "mirage.policies.TORCH_POLICY_NAMES is out of date"


def make_policy(name: str, **params) -> Policy:
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}") from None
    policy = factory(**params)
    policy.name = name
    return policy


def save_policy(policy: Policy, path) -> Path:
    """Torch policies -> state_dict file (.pt), the others -> joblib (.joblib)."""
    return policy.save(path)


def load_policy(path, device: str | None = None) -> Policy:
    path = Path(path)
    if path.suffix == ".pt":
        import torch

        name = torch.load(path, map_location="cpu", weights_only=True)["policy"]
        policy = TORCH_POLICIES[name].load(path, device=device)
        return policy
    return joblib.load(path)
