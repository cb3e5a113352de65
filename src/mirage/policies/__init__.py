"""Provisioning policies behind one interface (see docs/policies.md).

Names resolve lazily so that `mirage --help` and the light commands do not import torch.
"""

import importlib
import os

# The torch fits must give the same networks on every x86 CPU: reinforcement learning turns a
# last-bit difference into another policy, and the expected values are checked on any machine.
# Measured with one seeded DQN and REINFORCE fit on an AVX-512 Xeon and, under qemu-user, on
# Haswell (Intel, AVX2) and EPYC-Milan (AMD, AVX2) CPU models, three libraries pick their code
# by the machine:
# - MKL's matrix products: held to one code path by conditional numerical reproducibility
#   (MKL_CBWR=COMPATIBLE, Intel or not; about 15 % more fitting time on these small networks);
# - ATen's vectorised kernels: softmax and log-softmax give other last bits at AVX-512 width
#   than at AVX2 width, so ATen is held to its AVX2 kernels (ATEN_CPU_CAPABILITY=avx2; a CPU
#   without AVX2 falls back to ATen's unvectorised kernels, which differ);
# - MKL's vector math (VML), which ATen's sqrt calls: its sqrt is not correctly rounded and
#   differs between AVX-512 and AVX2 CPUs even under MKL_CBWR; Adam's step divides by a sqrt,
#   so the optimisers are fused Adam (mirage.policies.neural.adam), whose own kernel takes an
#   IEEE sqrt.
# Both variables must be set before torch loads, and every torch import of the package goes
# through this package. A value the user set wins (e.g. MKL_CBWR=AUTO: faster, per machine).
os.environ.setdefault("MKL_CBWR", "COMPATIBLE")
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")

from mirage.policies.catalogue import CATALOGUE, HISTORY, HISTORY_THREADS  # noqa: E402

_EXPORTS = {
    "Observation": "base", "Policy": "base", "first_submit_by_decide": "base",
    "SampleSet": "mirage.outcomes", "cost": "mirage.outcomes",
    "POLICIES": "registry", "load_policy": "registry", "make_policy": "registry", "save_policy": "registry",
}
#: name sets read from the catalogue (mirage.policies.catalogue) at each use, so that a plugin's
#: policy registered later is in them: the policies that train a torch network (and so can
#: use a GPU); those fitted once per training seed when ``policies.training_seeds`` > 1 (the
#: ones whose result depends on the seed more than on the data: reinforcement learning on a
#: few hundred episodes, where "Deep RL that Matters" asks for several seeds; the other learned
#: policies take the config's seed once); the torch policies that read the 144 x 42 history
#: window (mirage.policies.sequence), fitted in their own jobs on HISTORY_THREADS threads
#: (rules/common.smk, TORCH_GROUPS): on 2 cores their attention scores 2.6x and trains 1.4x
#: faster than on one (docs/policies.md), and their numbers differ between 1 and 2 threads.
_NAME_SETS = {
    "TORCH_POLICY_NAMES": CATALOGUE.torch,
    "SEEDED_POLICY_NAMES": CATALOGUE.seeded,
    "HISTORY_POLICY_NAMES": lambda: frozenset(CATALOGUE.names(HISTORY)),
}


def fit_threads(policy: str) -> int:
    """The CPU threads the workflow fits ``policy`` on: HISTORY_THREADS for a history model,
    one for every other policy."""
    return CATALOGUE[policy].threads if policy in CATALOGUE else 1


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
    n = int(training_seeds) if policy in CATALOGUE.seeded() else 1
    return [replica_name(policy, k) for k in range(max(n, 1))]


__all__ = sorted([*_EXPORTS, *_NAME_SETS, "HISTORY_THREADS", "fit_threads", "replica_name",
                  "replica_names"])


def __getattr__(name):
    if name in _NAME_SETS:
        return _NAME_SETS[name]()
    if name in _EXPORTS:
        module = _EXPORTS[name]
        if not module.startswith("mirage."):
            module = f"mirage.policies.{module}"
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module 'mirage.policies' has no attribute {name!r}")
