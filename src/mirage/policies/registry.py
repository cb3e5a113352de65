"""Names -> policy constructors, so evaluation and the workflow treat every policy alike."""

from __future__ import annotations

from pathlib import Path

import joblib

from mirage.policies import TORCH_POLICY_NAMES
from mirage.policies.base import Policy
from mirage.policies.baselines import Average, FixedLead, PlanLead, Reactive
from mirage.policies.dqn import DQN
from mirage.policies.oracle import Oracle
from mirage.policies.pg import PolicyGradient
from mirage.policies.quantile import QuantileLead
from mirage.policies.sequence import MoEValue, PGTransformer, TransformerValue
from mirage.policies.service import ServiceLevel
from mirage.policies.trees import RegressorPolicy

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
    "dqn": DQN,
    "dqn_tuned": lambda **p: DQN(tune_threshold=True, **p),
    "pg": PolicyGradient,
    "pg_tuned": lambda **p: PolicyGradient(tune_threshold=True, **p),
    "transformer": TransformerValue,
    "transformer_tuned": lambda **p: TransformerValue(tune_threshold=True, **p),
    "moe": MoEValue,
    "moe_tuned": lambda **p: MoEValue(tune_threshold=True, **p),
    "pg_transformer": PGTransformer,
    "oracle": Oracle,
}
POLICIES: tuple[str, ...] = tuple(_FACTORIES)
TORCH_POLICIES = {"dqn": DQN, "dqn_tuned": DQN, "pg": PolicyGradient,
                  "pg_tuned": PolicyGradient, "transformer": TransformerValue,
                  "transformer_tuned": TransformerValue, "moe": MoEValue, "moe_tuned": MoEValue,
                  "pg_transformer": PGTransformer}
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
