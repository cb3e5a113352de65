"""Event-driven Slurm simulator: warm start, snapshots, what-if queries (see docs/sim.md)."""

from .engine import INF, SERVICE_USER, Simulator
from .jobs import JobTable, SimInputError, to_seconds, to_timestamp
from .profile import Backfill, ClusterProfile, Priority, compat_profile, load_profile
from .state import SimState
from .warmstart import replay, warm_start

__all__ = [
    "INF", "SERVICE_USER", "Simulator", "JobTable", "SimInputError", "to_seconds", "to_timestamp",
    "Backfill", "ClusterProfile", "Priority", "compat_profile", "load_profile", "SimState",
    "replay", "warm_start",
]
