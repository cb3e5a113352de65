"""Names -> policies, read from the catalogue (mirage.policies.catalogue), so evaluation and the
workflow treat every policy alike: making one by its name, the parameters it takes from a
config, the tuned policy's pairing with its untuned one, saving and loading.

A policy's class is imported on first use: importing torch costs a process about 2 s, which a
fit of the other policies (or `mirage evaluate` of them) need not pay.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path

import joblib

from mirage.errors import MirageError
from mirage.policies.base import Policy
from mirage.policies.catalogue import CATALOGUE, HISTORY, REPLAYED, TORCH


class _TorchClasses(Mapping):
    """Torch policy name -> class, importing the class's module (and torch) when asked."""

    def __getitem__(self, name):
        if name not in CATALOGUE.torch():
            raise KeyError(name)
        return CATALOGUE[name].load_class()

    def __iter__(self):
        return iter(CATALOGUE.names(TORCH, HISTORY))

    def __len__(self):
        return len(CATALOGUE.torch())


TORCH_POLICIES: Mapping = _TorchClasses()


def __getattr__(name):
    # POLICIES is read from the catalogue at each use, so a plugin's policy registered later
    # (mirage.policies.catalogue.register) is among them
    if name == "POLICIES":
        return CATALOGUE.fitted()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_policy(name: str, **params) -> Policy:
    """The policy ``name`` (not fitted): its class with the arguments its name fixes and
    ``params``."""
    if name not in CATALOGUE.fitted():
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(CATALOGUE.fitted())}")
    entry = CATALOGUE[name]
    policy = entry.load_class()(**entry.fixed, **params)
    policy.name = name
    return policy


def policy_params(name: str, params: dict, *, c_I: float, c_O: float, device: str, threads: int = 1) -> dict:
    """The config's parameters for ``name`` plus the costs, device and threads where the policy
    takes them (threads come from the rule, not the config)."""
    if name in CATALOGUE and CATALOGUE[name].kind == REPLAYED:
        raise MirageError(f"{name} is not fitted on the samples: it is fitted on the training "
                          "trace and replayed on the validation samples. Fix: `mirage samples "
                          f"twin --policy {name}` (the workflow's decide_twin rule)")
    if name not in CATALOGUE:
        raise MirageError(f"unknown policy {name!r}; known: {', '.join(CATALOGUE.fitted())}")
    out = dict(params)
    cls = CATALOGUE[name].load_class()
    if CATALOGUE[name].torch:
        own = set(inspect.signature(cls.__init__).parameters) - {"self", "config"}
        # tune_threshold is the policy's name (dqn vs dqn_tuned), not a setting
        accepted = set(cls.config_class.__dataclass_fields__) | own - {"tune_threshold"}
        out.setdefault("device", device)
    else:
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
    unknown = set(out) - accepted
    if unknown:
        raise MirageError(
            f"policy {name!r} does not take parameter(s) {sorted(unknown)}; it takes {sorted(accepted)}. "
            "Fix `policies.params` in the config"
        )
    for key, value in (("c_I", c_I), ("c_O", c_O), ("threads", threads), ("n_jobs", threads)):
        if key in accepted:
            out.setdefault(key, value)
    return out


#: the settings of tuning alone, in which a tuned policy and its untuned one may differ: tuning
#: cross-fits a threshold and then fits the same model on the same samples with the same seed
#: as the untuned policy, so where both are fitted alike, the untuned policy's model is taken
#: instead of fitting it again (catalogue: Entry.tunes)
TUNING_KEYS = frozenset({"tune_threshold", "thresholds", "n_blocks", "threshold", "tune_every",
                         "tune_model_params"})


def final_fit_mismatch(tuned, base) -> list[str]:
    """The settings (other than tuning's) in which policy ``base`` was not fitted like the
    final model of ``tuned`` would be; empty when ``tuned`` may take ``base``'s model."""
    a = {k: v for k, v in tuned.get_params().items() if k not in TUNING_KEYS}
    b = {k: v for k, v in base.get_params().items() if k not in TUNING_KEYS}
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def shared_final(name: str, policy: Policy, finals=()) -> Policy | None:
    """The fitted policy of ``finals`` whose model ``policy`` (named ``name``, tuned) takes as
    its final model: its untuned policy (Entry.tunes), fitted with the same settings; None
    where there is none."""
    untuned = CATALOGUE[name].tunes
    for cand in finals:
        if untuned is not None and getattr(cand, "name", None) == untuned \
                and not final_fit_mismatch(policy, cand):
            return cand
    return None


def model_file(name: str) -> str:
    """The file name ``mirage fit`` saves policy ``name`` under."""
    return "model.pt" if CATALOGUE[name].torch else "model.joblib"


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
