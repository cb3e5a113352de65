"""Provisioning policies behind one interface (see docs/policies.md).

Names resolve lazily so that `mirage --help` and the light commands do not import torch.
"""

import importlib
import os

# Torch's matrix products run in MKL, which picks its kernels by the machine's instruction set.
# Measured on one AVX-512 machine with one seeded DQN fit: MKL held to its AVX2 path
# (MKL_CBWR=AVX2, as on an AVX2-only CPU) gave other weights than its AVX-512 path, and
# reinforcement learning turns such last-bit differences into other policies. ATen's own
# vectorised kernels did not matter there (its AVX2 and AVX-512 paths gave the same weights;
# only its unvectorised path, for CPUs without AVX2, differed). MKL's conditional numerical
# reproducibility (one code path on every x86 CPU, Intel or not) makes the torch fits agree
# across machines, for about 15 % more fitting time on these small networks. It must be set
# before torch loads MKL, and every torch import of the package goes through this package.
# A value the user set wins (MKL_CBWR=AUTO: faster, machine-dependent).
os.environ.setdefault("MKL_CBWR", "COMPATIBLE")

_EXPORTS = {
    "Observation": "base", "Policy": "base", "first_submit_by_decide": "base",
    "SampleSet": "data", "cost": "data",
    "POLICIES": "registry", "load_policy": "registry", "make_policy": "registry", "save_policy": "registry",
}
#: The policies that train a torch network (and so can use a GPU). Here rather than only in the
#: registry so that the workflow reads it without importing torch.
TORCH_POLICY_NAMES = frozenset({"dqn", "dqn_tuned", "pg", "pg_tuned"})
#: The policies fitted once per training seed when ``policies.training_seeds`` > 1: the ones whose
#: result depends on the seed more than on the data (reinforcement learning on a few hundred
#: episodes, where "Deep RL that Matters" asks for several seeds). The other learned policies
#: take the config's seed once.
SEEDED_POLICY_NAMES = TORCH_POLICY_NAMES


def replica_name(policy: str, k: int) -> str:
    """The model directory name of ``policy``'s fit with training seed ``seed + k``: the policy's
    own name for k = 0 (the model the provisioner and the figures use), ``<policy>-seed<k>``
    for the others."""
    if k < 0:
        raise ValueError(f"replica index must be >= 0, got {k}")
    return policy if k == 0 else f"{policy}-seed{k}"


def replica_names(policy: str, training_seeds: int) -> list[str]:
    """Every model directory name of ``policy`` under ``training_seeds`` seeds (one name for a
    policy that is not seeded)."""
    n = int(training_seeds) if policy in SEEDED_POLICY_NAMES else 1
    return [replica_name(policy, k) for k in range(max(n, 1))]


__all__ = sorted([*_EXPORTS, "TORCH_POLICY_NAMES", "SEEDED_POLICY_NAMES", "replica_name",
                  "replica_names"])


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"mirage.policies.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'mirage.policies' has no attribute {name!r}")
