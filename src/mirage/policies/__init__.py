"""Provisioning policies behind one interface (see docs/policies.md)."""

from mirage.policies.base import Observation, Policy, first_submit_by_decide
from mirage.policies.data import SampleSet, cost
from mirage.policies.registry import POLICIES, load_policy, make_policy, save_policy

__all__ = ["Observation", "Policy", "POLICIES", "SampleSet", "cost", "first_submit_by_decide",
           "load_policy", "make_policy", "save_policy"]
