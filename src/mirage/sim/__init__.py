"""Event-driven Slurm simulator: warm start, snapshots, what-if queries (see docs/sim.md)."""

from .engine import INF, SERVICE_USER, Simulator
from .jobs import JobTable, SimInputError, to_seconds, to_timestamp
from .cluster import Backfill, ClusterDescription, Priority, compat_cluster, load_cluster
from .state import SimState
from .warmstart import replay, warm_start

__all__ = [
    "INF", "SERVICE_USER", "Simulator", "JobTable", "SimInputError", "to_seconds", "to_timestamp",
    "Backfill", "ClusterDescription", "Priority", "compat_cluster", "load_cluster", "SimState",
    "replay", "warm_start",
]
