"""Cluster descriptions: what the simulator must know about a cluster, each value with its source.

A description lives in ``config/clusters/<cluster>.yaml``. Every leaf is ``{value: ..., source: ...}``
so that nobody has to guess where a number came from (a site's documentation, the Slurm default,
or an inference from the trace, with the inference named).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from mirage.errors import ConfigError

from .jobs import to_seconds
from mirage.units import DAY_S

BACKFILL_MODES = ("easy", "conservative", "none")
BACKGROUND_MODES = ("simulate", "pinned")
WINDOW_ROUNDINGS = ("up", "slurm")
PLANNERS = ("profile", "slurm")
#: the default wait (s) past a warm start after which an idle waiter is pinned (when pinned)
PIN_IDLE_GRACE_S = 600


@dataclass(frozen=True)
class Priority:
    """Slurm multifactor priority, restricted to the factors a trace lets us model."""

    weight_age: float = 1000.0
    max_age_s: int = 7 * DAY_S
    weight_size: float = 0.0
    #: multiplies the trace's recorded priority, used as a fixed per-job component
    weight_trace: float = 0.0
    #: Slurm caps the age factor at PriorityMaxAge; the reference simulator does not
    age_capped: bool = True
    #: Slurm's job priority is an integer: the weighted factors are summed and truncated, and
    #: jobs of equal priority go in job-id (submit) order; off: a real-valued priority whose age
    #: counts from the eligible time breaks every tie
    integer: bool = False
    #: Slurm's PriorityCalcPeriod: pending jobs' priorities are recomputed on this period (the
    #: decay thread's ticks), so a job's age is its age at the last tick, 0 if it entered the
    #: queue after it; 0: ages are exact at every moment. Needs ``integer``
    calc_period_s: int = 0
    #: the ticks fall at this offset past an epoch multiple of ``calc_period_s``: the thread
    #: starts with slurmctld (scontrol show config's BOOT_TIME) and ticks without drift
    calc_phase_s: int = 0


@dataclass(frozen=True)
class Backfill:
    """Slurm's ``SchedulerParameters`` backfill settings (``sched/backfill``)."""

    mode: str = "conservative"
    interval_s: int = 30
    window_min: int = 1440
    resolution_s: int = 60
    max_job_test: int = 100
    #: accepted for completeness; passes are instantaneous here, so it changes nothing
    continue_: bool = False
    #: a reservation takes every simulated node during its window, not only the job's: Slurm's
    #: backfill plans whole nodes (node bitmaps), so where the simulated "nodes" are the CPUs
    #: of one machine, a job planned for later keeps every other job off the machine then
    whole_node: bool = False
    #: "up": running jobs' ends and the tested job's limit rounded up to ``resolution_s`` (the
    #: simulator's default); "slurm": as sched/backfill 22.05 does it: exact ends and limits,
    #: each reservation from its start rounded down to ``resolution_s`` to its end rounded down,
    #: and a job's window [start, start + limit] touching a reservation counts as overlapping
    window_rounding: str = "up"
    #: passes only on the wall-clock grid of ``interval_s`` (epoch multiples), as the backfill
    #: thread of slurmctld wakes; off: a pass as soon as ``interval_s`` has passed since the last
    aligned: bool = False
    #: how a job that cannot start now is placed. "profile": the earliest window in which its
    #: nodes stay free given the running jobs' limits and the reservations made before it;
    #: "slurm": sched/backfill 22.05 on a partition of one node whose CPUs are the simulated
    #: nodes (needs conservative mode, whole_node and window_rounding "slurm"): the start comes
    #: from a will-run test on the running jobs alone, the reservations only decide from when it
    #: is tested (mirage.sim.backfill.SlurmNodeBackfill says how)
    planner: str = "profile"


@dataclass(frozen=True)
class ClusterDescription:
    cluster: str
    nodes: int
    #: ((from_epoch_s, nodes), ...) sorted; before the first entry the cluster has ``nodes``
    capacity: tuple = ()
    #: infer the capacity schedule from the trace's concurrent usage when simulating
    capacity_infer: bool = False
    priority: Priority = field(default_factory=Priority)
    backfill: Backfill = field(default_factory=Backfill)
    max_jobs_per_user: int | None = None
    max_nodes_per_user: int | None = None
    #: False: every window starts with an empty cluster (the reference's behaviour)
    warm_start: bool = True
    #: infer "started right after a same-user job ended after a long wait" as a dependency
    infer_dependencies: bool = False
    #: infer holds: a job stays out of the queue until the last time a job the model ranks no
    #: higher, at least as large and as long, started ahead of it (it cannot have been eligible)
    infer_holds: bool = False
    #: at a warm start, a queued job that fitted the idle nodes but did not start within
    #: ``pin_idle_grace_s`` is taken as not eligible and starts at its recorded start
    pin_idle_waiters: bool = False
    pin_idle_grace_s: int = PIN_IDLE_GRACE_S
    #: what-if background: "simulate" every trace job, or "pinned" to its recorded start
    whatif_background: str = "simulate"
    sources: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if self.nodes < 1:
            raise ConfigError(f"cluster description {self.cluster}: nodes must be >= 1. Fix: set nodes.value")
        if self.pin_idle_grace_s < 0:
            raise ConfigError(f"cluster description {self.cluster}: model.pin_idle_grace_s must be "
                              ">= 0 (seconds). Fix: set model.pin_idle_grace_s.value")
        if self.backfill.mode not in BACKFILL_MODES:
            raise ConfigError(
                f"cluster description {self.cluster}: backfill.mode {self.backfill.mode!r} unknown. "
                f"Fix: use one of {BACKFILL_MODES}"
            )
        if self.backfill.window_rounding not in WINDOW_ROUNDINGS:
            raise ConfigError(
                f"cluster description {self.cluster}: backfill.window_rounding "
                f"{self.backfill.window_rounding!r} unknown. Fix: use one of {WINDOW_ROUNDINGS}"
            )
        pr = self.priority
        if pr.calc_period_s < 0 or (pr.calc_period_s > 0 and not 0 <= pr.calc_phase_s < pr.calc_period_s):
            raise ConfigError(
                f"cluster description {self.cluster}: priority.calc_period_s {pr.calc_period_s} / "
                f"calc_phase_s {pr.calc_phase_s}: the period must be >= 0 and the phase within "
                "[0, period). Fix: give PriorityCalcPeriod in seconds and the ticks' offset past an "
                "epoch multiple of it")
        if pr.calc_period_s > 0 and not pr.integer:
            raise ConfigError(
                f"cluster description {self.cluster}: priority.calc_period_s is modelled with Slurm's "
                "integer priorities. Fix: set priority.integer to true, or calc_period_s to 0")
        if self.backfill.planner not in PLANNERS:
            raise ConfigError(
                f"cluster description {self.cluster}: backfill.planner {self.backfill.planner!r} unknown. "
                f"Fix: use one of {PLANNERS}"
            )
        if self.backfill.planner == "slurm" and not (self.backfill.whole_node
                                                     and self.backfill.window_rounding == "slurm"
                                                     and self.backfill.mode == "conservative"):
            raise ConfigError(
                f"cluster description {self.cluster}: backfill.planner 'slurm' models sched/backfill "
                "on a partition of one node: conservative, whole-node reservations on Slurm's windows. "
                "Fix: set backfill.mode to conservative, backfill.whole_node to true and "
                "backfill.window_rounding to 'slurm', or use planner 'profile'"
            )
        if self.whatif_background not in BACKGROUND_MODES:
            raise ConfigError(
                f"cluster description {self.cluster}: whatif_background {self.whatif_background!r} unknown. "
                f"Fix: use one of {BACKGROUND_MODES}"
            )

    def capacity_at(self, t: int) -> int:
        cap = self.nodes
        for since, n in self.capacity:
            if since <= t:
                cap = n
            else:
                break
        return cap

    def compat(self) -> "ClusterDescription":
        """The reference simulator's setting: 88 nodes, cold start, age+size, its backfill."""
        return compat_cluster(self.cluster)

    def with_(self, **kw) -> "ClusterDescription":
        """A copy with some fields replaced; ``priority``/``backfill`` accept dicts of changes."""
        for key in ("priority", "backfill"):
            if isinstance(kw.get(key), dict):
                kw[key] = replace(getattr(self, key), **kw[key])
        return replace(self, **kw)


def compat_cluster(cluster: str = "compat") -> ClusterDescription:
    """zhaozhang/Mirage ``src/sim``: 88 nodes whatever the cluster, empty cluster at the window
    start, priority = 7000 * age / 7 d (never capped) + 100 * nodes / 88, conservative backfill
    every 10 one-minute steps over a 2880-minute window at 600 s resolution, 3000 jobs tested."""
    src = "zhaozhang/Mirage src/sim (scheduler.py, test_data/*.json): reference setting"
    return ClusterDescription(
        cluster=cluster,
        nodes=88,
        capacity=(),
        priority=Priority(weight_age=7000.0, max_age_s=7 * DAY_S, weight_size=100.0, weight_trace=0.0,
                          age_capped=False),
        backfill=Backfill(mode="conservative", interval_s=600, window_min=2880, resolution_s=600,
                          max_job_test=3000, continue_=True),
        max_jobs_per_user=None,
        max_nodes_per_user=None,
        warm_start=False,
        infer_dependencies=False,
        whatif_background="simulate",
        sources={"*": src},
    )


def clusters_dir() -> Path:
    env = os.environ.get("MIRAGE_CLUSTERS")
    if env:
        return Path(env)
    # src/mirage/sim/cluster.py -> repository root
    return Path(__file__).resolve().parents[3] / "config" / "clusters"


def _leaf(node: dict, key: str, where: str, sources: dict, default=dataclasses.MISSING):
    if key not in node:
        if default is dataclasses.MISSING:
            raise ConfigError(f"{where}: key {key!r} missing. Fix: add {key}: {{value: ..., source: ...}}")
        return default
    item = node[key]
    if not isinstance(item, dict) or "value" not in item or "source" not in item:
        raise ConfigError(
            f"{where}: {key!r} must be a mapping with 'value' and 'source'. "
            f"Fix: write {key}: {{value: ..., source: \"where the number comes from\"}}"
        )
    sources[key] = str(item["source"])
    return item["value"]


def load_cluster(cluster: str, path: str | Path | None = None) -> ClusterDescription:
    """Read ``config/clusters/<cluster>.yaml`` (or ``path``); ``compat`` gives the reference's."""
    import yaml

    p = Path(path) if path is not None else clusters_dir() / f"{cluster}.yaml"
    if not p.is_file():
        have = sorted(q.stem for q in p.parent.glob("*.yaml")) if p.parent.is_dir() else []
        raise ConfigError(f"no cluster description {p}. Fix: use one of {have} or write that file")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML ({e}). Fix: correct the syntax") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{p}: expected a mapping at the top. Fix: see config/clusters/ls6.yaml")
    where = str(p)
    src: dict = {}
    nodes = int(_leaf(doc, "nodes", where, src))
    sched = _leaf(doc, "capacity_schedule", where, src, default=[])
    capacity_infer = sched == "infer"
    try:
        capacity = () if capacity_infer else tuple(
            sorted((to_seconds(t), int(n)) for t, n in (sched or [])))
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: capacity_schedule must be [[time, nodes], ...] ({e})") from None
    pr = doc.get("priority", {}) or {}
    prio_src: dict = {}
    priority = Priority(
        weight_age=float(_leaf(pr, "weight_age", where + ":priority", prio_src, 1000.0)),
        max_age_s=int(float(_leaf(pr, "max_age_days", where + ":priority", prio_src, 7)) * DAY_S),
        weight_size=float(_leaf(pr, "weight_size", where + ":priority", prio_src, 0.0)),
        weight_trace=float(_leaf(pr, "weight_trace", where + ":priority", prio_src, 0.0)),
        age_capped=bool(_leaf(pr, "age_capped", where + ":priority", prio_src, True)),
        integer=bool(_leaf(pr, "integer", where + ":priority", prio_src, False)),
        calc_period_s=int(_leaf(pr, "calc_period_s", where + ":priority", prio_src, 0)),
        calc_phase_s=int(_leaf(pr, "calc_phase_s", where + ":priority", prio_src, 0)),
    )
    bf = doc.get("backfill", {}) or {}
    bf_src: dict = {}
    backfill = Backfill(
        mode=str(_leaf(bf, "mode", where + ":backfill", bf_src, "conservative")),
        interval_s=int(_leaf(bf, "bf_interval", where + ":backfill", bf_src, 30)),
        window_min=int(_leaf(bf, "bf_window", where + ":backfill", bf_src, 1440)),
        resolution_s=int(_leaf(bf, "bf_resolution", where + ":backfill", bf_src, 60)),
        max_job_test=int(_leaf(bf, "bf_max_job_test", where + ":backfill", bf_src, 100)),
        continue_=bool(_leaf(bf, "bf_continue", where + ":backfill", bf_src, False)),
        whole_node=bool(_leaf(bf, "whole_node", where + ":backfill", bf_src, False)),
        window_rounding=str(_leaf(bf, "window_rounding", where + ":backfill", bf_src, "up")),
        aligned=bool(_leaf(bf, "aligned", where + ":backfill", bf_src, False)),
        planner=str(_leaf(bf, "planner", where + ":backfill", bf_src, "profile")),
    )
    lim = doc.get("user_limits", {}) or {}
    lim_src: dict = {}
    mj = _leaf(lim, "max_running_jobs", where + ":user_limits", lim_src, None)
    mn = _leaf(lim, "max_nodes", where + ":user_limits", lim_src, None)
    sources = {**src, **{f"priority.{k}": v for k, v in prio_src.items()},
               **{f"backfill.{k}": v for k, v in bf_src.items()},
               **{f"user_limits.{k}": v for k, v in lim_src.items()}}
    model = doc.get("model", {}) or {}
    model_src: dict = {}
    prof = ClusterDescription(
        cluster=str(doc.get("cluster", cluster)),
        nodes=nodes,
        capacity=capacity,
        capacity_infer=capacity_infer,
        priority=priority,
        backfill=backfill,
        max_jobs_per_user=None if mj is None else int(mj),
        max_nodes_per_user=None if mn is None else int(mn),
        warm_start=bool(_leaf(model, "warm_start", where + ":model", model_src, True)),
        infer_dependencies=bool(_leaf(model, "infer_dependencies", where + ":model", model_src, False)),
        infer_holds=bool(_leaf(model, "infer_holds", where + ":model", model_src, False)),
        pin_idle_waiters=bool(_leaf(model, "pin_idle_waiters", where + ":model", model_src, False)),
        pin_idle_grace_s=int(_leaf(model, "pin_idle_grace_s", where + ":model", model_src,
                                     PIN_IDLE_GRACE_S)),
        whatif_background=str(_leaf(model, "whatif_background", where + ":model", model_src, "simulate")),
        sources={**sources, **{f"model.{k}": v for k, v in model_src.items()}},
    )
    return prof
