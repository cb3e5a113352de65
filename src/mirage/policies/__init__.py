"""Provisioning policies behind one interface (see docs/policies.md).

Names resolve lazily so that `mirage --help` and the light commands do not import torch.
"""

import importlib

_EXPORTS = {
    "Observation": "base", "Policy": "base", "first_submit_by_decide": "base",
    "SampleSet": "data", "cost": "data",
    "POLICIES": "registry", "load_policy": "registry", "make_policy": "registry", "save_policy": "registry",
}
#: The policies that train a torch network (and so can use a GPU). Here rather than only in the
#: registry so that the workflow reads it without importing torch.
TORCH_POLICY_NAMES = frozenset({"dqn", "dqn_tuned", "pg", "pg_tuned"})
__all__ = sorted([*_EXPORTS, "TORCH_POLICY_NAMES"])


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"mirage.policies.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'mirage.policies' has no attribute {name!r}")
