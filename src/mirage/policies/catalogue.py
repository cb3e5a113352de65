"""The policy catalogue: one line per policy, everything the project knows about it by name.

Each :class:`Entry` says where the policy's class lives (``"module:Class"``, imported on first
use), the constructor arguments its name fixes, how the workflow fits it (its kind), whether it
is fitted once per training seed, which policy it tunes, its role in the evaluation, whether it
decides from the live queue, and its colour in the figures. The registry
(mirage.policies.registry), the name sets of mirage.policies, the baselines of the evaluation,
the figures' colours, the workflow's fit groups (rules/common.smk) and the config schema's list
of policies are all read from here. Adding a policy is its module plus one line below
(CONTRIBUTING.md, "Adding a policy"); a plugin adds its own with :func:`register`.

Only the standard library is imported, so the Snakefile and the figures read the catalogue
without loading numpy, torch or any policy class.
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

#: how the workflow fits a policy (rules/learn.smk):
#: a rule or a batch model: together in one job on one thread (rule fit_policies);
RULE, BATCH = "rule", "batch"
#: a torch network on the compact features (rule fit_torch, one thread), or on the 144 x 42
#: history window (rule fit_history, HISTORY_THREADS threads, reads the history);
TORCH, HISTORY = "torch", "history"
#: not fitted on the samples: fitted on the training trace and replayed on the validation
#: samples (rule decide_twin, `mirage samples twin`)
REPLAYED = "replayed"
KINDS = (RULE, BATCH, TORCH, HISTORY, REPLAYED)

#: a policy's role in the evaluation: a rule baseline the learned policies are judged
#: against, a learned policy, or the hindsight bound (the oracle); the last two
#: are not learned
BASELINE, LEARNED, ORACLE = "baseline", "learned", "oracle"
ROLES = (BASELINE, LEARNED, ORACLE)

#: the threads a history model is fitted on (its numbers differ between 1 and 2 threads)
HISTORY_THREADS = 2


@dataclass(frozen=True)
class Entry:
    """One policy. ``cls``: ``"package.module:Class"``; ``fixed``: the constructor arguments
    the name fixes (rf_tuned = RegressorPolicy(kind="rf", tune_threshold=True)); ``kind``: one
    of KINDS; ``seeded``: fitted once per training seed (``policies.training_seeds``);
    ``tunes``: the untuned policy this one tunes (whose final fit it takes where both are
    fitted alike); ``role``: one of ROLES; ``needs_queue``: decides from the live queue;
    ``colour``: its colour in every figure (None: one chosen by its name)."""

    name: str
    cls: str
    kind: str
    fixed: Mapping[str, Any] = field(default_factory=dict, hash=False)
    seeded: bool = False
    tunes: str | None = None
    role: str = LEARNED
    needs_queue: bool = False
    colour: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"policy {self.name!r}: kind {self.kind!r} is none of {KINDS}")
        if self.role not in ROLES:
            raise ValueError(f"policy {self.name!r}: role {self.role!r} is none of {ROLES}")
        if ":" not in self.cls:
            raise ValueError(f"policy {self.name!r}: cls {self.cls!r} is not 'module:Class'")
        object.__setattr__(self, "fixed", MappingProxyType(dict(self.fixed)))

    @property
    def module(self) -> str:
        return self.cls.partition(":")[0]

    @property
    def torch(self) -> bool:
        """Whether it trains a torch network (and is saved as a .pt state dict)."""
        return self.kind in (TORCH, HISTORY)

    @property
    def threads(self) -> int:
        """The CPU threads the workflow fits it on."""
        return HISTORY_THREADS if self.kind == HISTORY else 1

    def load_class(self) -> type:
        """The policy's class, its module imported now."""
        module, _, name = self.cls.partition(":")
        return getattr(importlib.import_module(module), name)


_T = "mirage.policies.trees:RegressorPolicy"
_SEQ = "mirage.policies.sequence"
_TUNED = {"tune_threshold": True}

# Every policy of the project, in the order the tables and figures list them. A learned policy
# and its threshold-tuned twin share a hue (the twin lighter); the oracle is black, reactive
# dark grey.
_ENTRIES = [
    Entry("reactive", "mirage.policies.baselines:Reactive", RULE, role=BASELINE, colour="#4d4d4d"),
    Entry("average", "mirage.policies.baselines:Average", RULE, role=BASELINE, colour="#8c564b"),
    Entry("fixed_lead", "mirage.policies.baselines:FixedLead", RULE, role=BASELINE, colour="#b5b300"),
    Entry("plan_lead", "mirage.policies.baselines:PlanLead", RULE, role=BASELINE, colour="#17becf"),
    Entry("quantile", "mirage.policies.quantile:QuantileLead", RULE, colour="#e377c2"),
    Entry("service_level", "mirage.policies.service:ServiceLevel", RULE, colour="#9467bd"),
    Entry("rf", _T, BATCH, fixed={"kind": "rf"}, colour="#2ca02c"),
    Entry("rf_tuned", _T, BATCH, fixed={"kind": "rf", **_TUNED}, tunes="rf", colour="#7fd36b"),
    Entry("xgb", _T, BATCH, fixed={"kind": "xgb"}, colour="#ff7f0e"),
    Entry("xgb_tuned", _T, BATCH, fixed={"kind": "xgb", **_TUNED}, tunes="xgb", colour="#ffb766"),
    Entry("dqn", "mirage.policies.dqn:DQN", TORCH, seeded=True, colour="#1f77b4"),
    Entry("dqn_tuned", "mirage.policies.dqn:DQN", TORCH, fixed=_TUNED, seeded=True, tunes="dqn",
          colour="#79b2e0"),
    Entry("pg", "mirage.policies.pg:PolicyGradient", TORCH, seeded=True, colour="#d62728"),
    Entry("pg_tuned", "mirage.policies.pg:PolicyGradient", TORCH, fixed=_TUNED, seeded=True,
          tunes="pg", colour="#f08584"),
    Entry("ppo", "mirage.policies.ppo:PPO", TORCH, seeded=True, colour="#3f51b5"),
    Entry("ppo_tuned", "mirage.policies.ppo:PPO", TORCH, fixed=_TUNED, seeded=True, tunes="ppo",
          colour="#9fa8da"),
    Entry("transformer", f"{_SEQ}:TransformerValue", HISTORY, colour="#00796b"),
    Entry("transformer_tuned", f"{_SEQ}:TransformerValue", HISTORY, fixed=_TUNED,
          tunes="transformer", colour="#4db6ac"),
    Entry("moe", f"{_SEQ}:MoEValue", HISTORY, colour="#7b4173"),
    Entry("moe_tuned", f"{_SEQ}:MoEValue", HISTORY, fixed=_TUNED, tunes="moe", colour="#c085b8"),
    Entry("pg_transformer", f"{_SEQ}:PGTransformer", HISTORY, seeded=True, colour="#8c1c13"),
    Entry("oracle", "mirage.policies.oracle:Oracle", RULE, role=ORACLE, colour="#000000"),
    Entry("twin", "mirage.twin.policy:TwinPolicy", REPLAYED, needs_queue=True, colour="#e6ab02"),
    Entry("twin_tuned", "mirage.twin.policy:TwinPolicy", REPLAYED, needs_queue=True,
          tunes="twin", colour="#a6761d"),
]


class Catalogue:
    """The policies by name, in declaration order, with the queries the project asks."""

    def __init__(self, entries=()):
        self._entries: dict[str, Entry] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: Entry) -> Entry:
        if entry.name in self._entries:
            raise ValueError(f"policy {entry.name!r} is already in the catalogue")
        if entry.tunes is not None and entry.tunes not in self._entries:
            raise ValueError(f"policy {entry.name!r} tunes {entry.tunes!r}, which is not in the "
                             "catalogue: declare the untuned policy first")
        self._entries[entry.name] = entry
        return entry

    def remove(self, name: str) -> None:
        del self._entries[name]

    def __getitem__(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown policy {name!r}; known: {', '.join(self._entries)}") from None

    def get(self, name: str) -> Entry | None:
        return self._entries.get(name)

    def __contains__(self, name) -> bool:
        return name in self._entries

    def __iter__(self):
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def names(self, *kinds: str) -> tuple[str, ...]:
        """Every name, or those of the given kinds, in declaration order."""
        return tuple(e.name for e in self if not kinds or e.kind in kinds)

    def fitted(self) -> tuple[str, ...]:
        """The policies `mirage fit` fits on the samples: every one that is not replayed."""
        return tuple(e.name for e in self if e.kind != REPLAYED)

    def torch(self) -> frozenset[str]:
        return frozenset(e.name for e in self if e.torch)

    def seeded(self) -> frozenset[str]:
        return frozenset(e.name for e in self if e.seeded)

    def reinforcement_learning(self, tuned: bool = True) -> tuple[str, ...]:
        """The reinforcement-learning policies (seeded torch policies: DQN, REINFORCE, PPO and
        their tuned variants), in declaration order; ``tuned=False``: the untuned ones."""
        return tuple(e.name for e in self if e.kind == TORCH and e.seeded
                     and (tuned or e.tunes is None))

    def role(self, role: str) -> tuple[str, ...]:
        return tuple(e.name for e in self if e.role == role)

    def not_learned(self) -> tuple[str, ...]:
        """The baselines, then the oracle: every policy that learns nothing to be judged on."""
        return self.role(BASELINE) + self.role(ORACLE)

    def tuned_of(self) -> dict[str, str]:
        """Tuned policy -> the untuned policy it tunes."""
        return {e.name: e.tunes for e in self if e.tunes is not None}

    def colours(self) -> dict[str, str]:
        return {e.name: e.colour for e in self if e.colour is not None}


#: the project's policies; :func:`register` adds a plugin's
CATALOGUE = Catalogue(_ENTRIES)


def register(entry: Entry) -> Entry:
    """Add ``entry`` to the catalogue (a plugin's policy): from then on it is made, fitted,
    evaluated, drawn and accepted in a config's ``policies.names`` like the project's own.
    Its role counts where mirage.evaluate is imported after it: ``BASELINES`` and
    ``NOT_LEARNED`` of mirage.evaluate.metrics are read from the catalogue once, on import."""
    return CATALOGUE.add(entry)


@contextmanager
def registered(entry: Entry):
    """``entry`` in the catalogue inside the ``with`` block, removed again after it."""
    register(entry)
    try:
        yield entry
    finally:
        CATALOGUE.remove(entry.name)
