"""The twin policy: decide by simulating the observable queue forward many times (issue 17).

At a decision point the policy sees a :class:`~mirage.features.queue.QueueView`, only what a
user of the live cluster sees: the running jobs (size, limit, start, user), the pending queue in
priority order (submit, size, limit, current priority, user), the capacity and the
predecessor's submit, start and limit. Never the true runtimes nor the future arrivals of a
trace. It draws K futures of that view (:meth:`TwinPolicy.draw_future`) from what :meth:`fit`
learned on the training window:

- the runtime of a job given its limit: its runtime/limit ratio drawn from the ratios of every
  training job (``runtime_pool="all"``, default); ``"user"`` draws from the user's own ratios
  (users with at least ``min_user_jobs`` jobs), else from the jobs of the same limit bucket
  (<=1, <=6, <=24, >24 h), else from all; ``"bucket"`` starts at the limit bucket. On real ls6
  the pooled set predicted March's remaining runtimes best (the users' own ratios of
  November-February the worst: docs/results-ls6.md); a running job's ratio is drawn
  conditioned on exceeding its elapsed time (inverse CDF over the ratios left), so the point
  mass at 1 (jobs killed at their limit) is kept;
- the arrivals over ``horizon_h`` hours: ``arrivals="weeks"`` (default) copies the jobs of a
  random training week submitted in the same hour-of-week span, shifted to now (a week-block
  bootstrap: bursts, the weekly cycle and the user mix come with it); ``"poisson"`` draws a
  Poisson count per hour from the training rate of that hour of the week and resamples jobs
  submitted in that hour of the week.

Each drawn future is simulated with the successor submitted now by a callable the caller
passes in (``simulate(view, future, cap_s=...) -> x_h``, +inf past the cap; the engine side is
:func:`mirage.twin.world.simulate_x`, :meth:`TwinPolicy.simulator` binds it to a cluster), giving
x = successor start - predecessor end in hours. The rule (``rule="quantile"``): submit now iff
the tau = c_I / (c_I + c_O) quantile of the K values of x is positive (the newsvendor
quantile: an interruption is expected at that level), beyond ``tolerance_s`` (60 s: a successor
starting within a scheduler pass of the predecessor's end counts as uninterrupted; in a drawn
world the predecessor ends exactly at its limit and a free successor follows seconds later).
Only whether x exceeds the tolerance matters, so each draw is simulated only that far past the
predecessor's end (``sign_only``), and the draws stop once the decision is settled
(``early_stop``: the same decision as all K, exactly).

Draw k at decision time ``now`` uses ``numpy.random.default_rng([seed, now, chain_nodes, k])``
with the fit's seed: decisions are reproducible and do not depend on the order in which points
or samples are evaluated, nor on anything outside the view.

The policy follows scikit-learn's conventions: its settings are its constructor's arguments,
kept as they are under the same names (``get_params`` / ``set_params`` / ``sklearn.base.clone``
work), checked by :meth:`TwinPolicy.fit`; what fit learns ends in ``_``. It asks any caller the
same way as the other policies (:meth:`TwinPolicy.decide` on an :class:`Observation`), except
that it reads the queue view (``needs_queue``: the caller adds it, :class:`QueueObservation`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from mirage.errors import MirageError
from mirage.features.queue import SERVICE_NAME, QueueFuture, QueueView
from mirage.outcomes import cost
from mirage.policies.base import Observation, Policy
from mirage.twin import world
from mirage.units import DAY_S, HOUR_S, WEEK_S

#: seconds from the Monday 00:00 before the epoch to the epoch (1970-01-01 was a Thursday)
_MONDAY_SHIFT_S = 3 * DAY_S
#: upper edges (hours) of the pooled limit buckets; the last bucket is everything above
LIMIT_BUCKETS_H = (1.0, 6.0, 24.0)
#: each rule: the method that decides and the engine function of mirage.twin.world it calls
_RULES = {"quantile": ("evaluate_view", "simulate_x"), "expected": ("evaluate_pair", "simulate_pair"),
          "plan": ("evaluate_plan", "simulate_leads")}
RULES = tuple(_RULES)
ARRIVALS = ("weeks", "poisson")
#: the runtime model's pools, most specific first: where a draw starts (then falls back)
RUNTIME_POOLS = ("user", "bucket", "all")


def plan_submit_now(x_h: np.ndarray, c_I: float, c_O: float) -> bool:
    """The ``plan`` rule on one point's (K, J) draws of x for each candidate submit time (now
    first): submit iff submitting now has the lowest mean cost (ties submit). No draws (all
    NaN): no submit."""
    x = np.asarray(x_h, dtype=np.float64)
    if np.isnan(x).all():
        return False
    mean = cost(x, float(c_I), float(c_O)).mean(axis=0)
    return bool(mean[0] <= mean.min())


class TwinPolicyError(MirageError):
    """The twin policy was used without what it needs (a trace to fit, a queue view)."""


@dataclass(frozen=True)
class QueueObservation(Observation):
    """An :class:`~mirage.policies.base.Observation` with the observable queue at the point
    (``queue``): what a policy that declares ``needs_queue`` decides from (the provisioner
    builds it from squeue, mirage.live.observe.LiveObserver.queue_view)."""

    queue: QueueView | None = None


def _bucket(limit_s: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(LIMIT_BUCKETS_H) * 3600.0, np.asarray(limit_s, float),
                           side="left")


def hour_of_week(t_s) -> np.ndarray:
    """0..167, Monday 00-01 h is 0 (naive cluster clock)."""
    return ((np.asarray(t_s, dtype=np.int64) + _MONDAY_SHIFT_S) % WEEK_S) // HOUR_S


class TwinPolicy(Policy):
    """Submit iff the successor submitted now fares best in K drawn futures of the queue
    (the module's docstring says how they are drawn and weighed)."""

    name = "twin"

    def __init__(self, K: int = 32, horizon_h: float = 72.0, rule: str = "quantile",
                 tau: float | None = None, c_I: float = 1.0, c_O: float = 0.5,
                 arrivals: str = "weeks", min_user_jobs: int = 20, runtime_pool: str = "all",
                 gate_h: float | None = None, sign_only: bool = True, early_stop: bool = True,
                 cap_h: float = 48.0, tolerance_s: int = 60, step_s: int = 600,
                 plan_veto: bool = False):
        self.K = K
        self.horizon_h = horizon_h
        self.rule = rule
        self.tau = tau
        self.c_I = c_I
        self.c_O = c_O
        self.arrivals = arrivals
        self.min_user_jobs = min_user_jobs
        self.runtime_pool = runtime_pool
        self.gate_h = gate_h
        self.sign_only = sign_only
        self.early_stop = early_stop
        self.cap_h = cap_h
        self.tolerance_s = tolerance_s
        self.step_s = step_s
        self.plan_veto = plan_veto

    # ---- settings --------------------------------------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's arguments in their declared order (Policy's get_params and
        set_params read them; fit.json lists them in this order)."""
        return [n for n in inspect.signature(cls.__init__).parameters if n != "self"]

    @property
    def quantile_level(self) -> float:
        """The quantile level the ``quantile`` rule reads: ``tau``, else c_I / (c_I + c_O)."""
        return self.c_I / (self.c_I + self.c_O) if self.tau is None else float(self.tau)

    def _check_params(self) -> None:
        if self.rule not in RULES:
            raise TwinPolicyError(f"twin: rule {self.rule!r} unknown. Fix: use one of {RULES}")
        if self.arrivals not in ARRIVALS:
            raise TwinPolicyError(f"twin: arrivals {self.arrivals!r} unknown. Fix: use one of {ARRIVALS}")
        if self.runtime_pool not in RUNTIME_POOLS:
            raise TwinPolicyError(f"twin: runtime_pool {self.runtime_pool!r} unknown. "
                                  f"Fix: use one of {RUNTIME_POOLS}")
        if int(self.K) < 1 or float(self.horizon_h) <= 0:
            raise TwinPolicyError("twin: K must be >= 1 and horizon_h > 0. Fix: set them in the params")
        if not 0.0 < self.quantile_level < 1.0:
            raise TwinPolicyError(f"twin: tau {self.quantile_level} must lie in (0, 1). "
                                  "Fix: set tau or c_I, c_O")

    # ---- fit -------------------------------------------------------------------------------
    def fit(self, train=None, seed: int = 0, *, trace: pd.DataFrame | None = None,
            holes=(), cluster=None) -> "TwinPolicy":
        """Learn the runtime and arrival models from ``trace``, a canonical (clean) job table
        of the training split; with an ``in_window`` column (mirage.traces.split) only the jobs
        submitted inside the window count. ``train`` (the training samples) is not used.
        ``holes``: spans ``(start_s, end_s)`` of time (epoch seconds) left out: their jobs
        count in neither model and the week-block arrivals never copy a window that touches
        one (the time-ordered tuning, mirage.twin.tune.tune_twin, fits the twin without the
        block of time it scores). ``cluster``: the description (mirage.sim.cluster) that
        :meth:`decide` simulates the drawn futures with (None: only :meth:`evaluate`, with a
        simulate call the caller binds)."""
        self._check_params()
        holes = tuple((int(a), int(b)) for a, b in holes)
        if trace is None:
            raise TwinPolicyError(
                "twin: fit needs the training trace (the canonical job table). "
                "Fix: pass trace=<train.parquet as a DataFrame>")
        jobs = trace
        if "in_window" in jobs.columns:
            jobs = jobs[jobs["in_window"].astype(bool)]
        need = ["submit", "start", "end", "time_limit_min", "nodes"]
        jobs = jobs.dropna(subset=need)
        if len(jobs) == 0:
            raise TwinPolicyError("twin: the training trace has no complete job in its window. "
                                  "Fix: pass the clean train.parquet of the split")
        jobs = jobs.sort_values(["submit", "job_id"] if "job_id" in jobs else ["submit"],
                                kind="stable")

        def secs(col):
            return jobs[col].to_numpy(dtype="datetime64[s]").astype(np.int64)

        if holes:
            sub_s = secs("submit")
            inside = np.zeros(len(jobs), dtype=bool)
            for a, b in holes:
                inside |= (sub_s >= a) & (sub_s < b)
            jobs = jobs[~inside]
            if len(jobs) == 0:
                raise TwinPolicyError("twin: no training job is left outside the holes. "
                                      "Fix: pass holes that leave part of the window")
        submit, start, end = secs("submit"), secs("start"), secs("end")
        limit = jobs["time_limit_min"].to_numpy(dtype=np.int64) * 60
        run = np.clip(end - start, 0, limit)
        ratio = run / np.maximum(limit, 1)
        users = (jobs["user"].astype("string").fillna("?").to_numpy(dtype=object)
                 if "user" in jobs else np.full(len(jobs), "?", dtype=object))
        tprio = (jobs["priority"].astype("Float64").fillna(0).to_numpy(dtype=np.float64)
                 if "priority" in jobs else np.zeros(len(jobs)))
        nodes = jobs["nodes"].to_numpy(dtype=np.int64)
        # the job each one waited on (``depends_on``: recorded, or inferred by the caller), as a
        # position among these jobs; -1: none, or not among them
        dep = np.full(len(jobs), -1, dtype=np.int64)
        if "depends_on" in jobs:
            pos = pd.Series(np.arange(len(jobs)), index=jobs["job_id"].astype(str).to_numpy())
            found = jobs["depends_on"].astype("string").map(pos).to_numpy(dtype=float, na_value=-1)
            dep = np.where(found < np.arange(len(jobs)), found, -1).astype(np.int64)

        # runtime model: one pool of sorted ratio arrays, addressed by (offset, length)
        parts, offsets, pos = [], {}, 0

        def add(key, values):
            nonlocal pos
            v = np.sort(np.asarray(values, dtype=np.float64))
            parts.append(v)
            offsets[key] = (pos, len(v))
            pos += len(v)

        pool = self.runtime_pool  # the pools a draw may start at: this one and after
        if pool == "user":
            names, counts = np.unique(users, return_counts=True)
            for name, c in zip(names, counts):
                if c >= int(self.min_user_jobs):
                    add(("user", str(name)), ratio[users == name])
        if pool in ("user", "bucket"):
            buckets = _bucket(limit)
            for b in range(len(LIMIT_BUCKETS_H) + 1):
                if (buckets == b).any():
                    add(("bucket", b), ratio[buckets == b])
        add(("all",), ratio)
        self.ratio_pool_ = np.concatenate(parts)
        self.ratio_index_ = offsets

        # arrival model: the training jobs themselves, with their span and hour-of-week rates
        self.arrival_jobs_ = {"submit": submit, "nodes": nodes, "limit_s": limit, "run": run,
                              "user": users, "tprio": tprio, "dep": dep}
        lo = int(pd.Timestamp(submit.min(), unit="s").floor("D").value // 10**9)
        hi = int(pd.Timestamp(submit.max(), unit="s").ceil("D").value // 10**9)
        hi = max(hi, lo + DAY_S)
        self.span_ = (lo, hi)
        # hours of the week covered by the span, and the jobs submitted in each
        hours = np.arange(lo, hi, HOUR_S, dtype=np.int64)
        for a, b in holes:
            hours = hours[(hours < a - 3599) | (hours >= b)]
        self.holes_ = holes
        covered = np.bincount(hour_of_week(hours), minlength=168).astype(np.float64)
        how = hour_of_week(submit)
        per_hour = np.bincount(how, minlength=168).astype(np.float64)
        self.hour_rate_ = np.divide(per_hour, covered, out=np.zeros(168), where=covered > 0)
        order = np.argsort(how, kind="stable")
        self.hour_jobs_ = (order, np.searchsorted(how[order], np.arange(169)))
        self.succ_tprio_ = float(np.median(tprio))
        self.seed_ = int(seed)
        self.cluster_ = cluster
        return self

    def _fitted(self) -> None:
        if getattr(self, "ratio_pool_", None) is None:
            raise RuntimeError(f"{self.name} policy is not fitted; call fit() first")

    # ---- runtime model ---------------------------------------------------------------------
    def _support(self, user: str, limit_s: int, elapsed_s: int) -> tuple[int, int]:
        """(first index, count) in ratio_pool_ of the ratios r with r * limit > elapsed, from the
        user's own ratios, else the limit bucket's, else all; (−1, 0): none (runs to its limit)."""
        thr = elapsed_s / max(int(limit_s), 1)
        idx = self.ratio_index_
        pool = self.ratio_pool_
        for key in (("user", user), ("bucket", int(_bucket([limit_s])[0])), ("all",)):
            hit = idx.get(key)
            if hit is None:
                continue
            off, n = hit
            lo = int(np.searchsorted(pool[off:off + n], thr, side="right"))
            if lo < n:
                return off + lo, n - lo
        return -1, 0

    def _supports(self, users, limits, elapsed) -> tuple[np.ndarray, np.ndarray]:
        out = [self._support(str(u), int(lim), int(el)) for u, lim, el in zip(users, limits, elapsed)]
        if not out:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        a = np.asarray(out, dtype=np.int64)
        return a[:, 0], a[:, 1]

    def _draw_runs(self, rng: np.random.Generator, support, limits, elapsed) -> np.ndarray:
        first, count = support
        limits = np.asarray(limits, dtype=np.int64)
        elapsed = np.asarray(elapsed, dtype=np.int64)
        u = rng.random(len(limits))
        ratio = np.ones(len(limits))
        has = count > 0
        if has.any():
            ratio[has] = self.ratio_pool_[first[has] + np.minimum(
                (u[has] * count[has]).astype(np.int64), count[has] - 1)]
        run = np.ceil(ratio * limits).astype(np.int64)
        return np.minimum(np.maximum(run, elapsed + 1), np.maximum(limits, elapsed + 1))

    def draw_runtimes(self, rng: np.random.Generator, users, limits_s, elapsed_s) -> np.ndarray:
        """Total runtimes (s) of jobs of these users and limits that have run ``elapsed_s`` (0 for
        pending jobs): each > its elapsed time and <= its limit."""
        self._fitted()
        return self._draw_runs(rng, self._supports(users, limits_s, elapsed_s), limits_s, elapsed_s)

    # ---- arrival model ---------------------------------------------------------------------
    def draw_arrivals(self, rng: np.random.Generator, now: int, capacity: int, *,
                      horizon_s: int | None = None) -> dict:
        """The jobs submitted in (now, now + horizon]: dict of arrays sorted by submit, and
        ``source``: the start of the training window a week block copied (-1: Poisson draws).
        ``horizon_s``: another horizon than the policy's ``horizon_h`` (a drawn world,
        mirage.twin.replay.model_world)."""
        self._fitted()
        H = int(round(float(self.horizon_h) * HOUR_S)) if horizon_s is None else int(horizon_s)
        J = self.arrival_jobs_
        source = -1
        if self.arrivals == "weeks":
            idx, submit, source = self._week_block(rng, now, H)
        else:
            idx, submit = self._poisson(rng, now, H)
        keep = J["nodes"][idx] <= capacity  # a job larger than the cluster cannot be submitted
        idx, submit = idx[keep], submit[keep]
        order = np.argsort(submit, kind="stable")
        idx, submit = idx[order], submit[order]
        # a copied job keeps waiting on the job it waited on where that one is copied too (a
        # week block keeps its chains); ids are negative, apart from the view's job ids
        dep = J["dep"][idx]
        if self.arrivals == "weeks":
            dep = np.where(np.isin(dep, idx) & (dep >= 0), -2 - dep, -1)
            ids = -2 - idx
        else:  # jobs resampled one by one: no chains, and a job may come twice
            dep = np.full(len(idx), -1, dtype=np.int64)
            ids = -2 - np.arange(len(idx), dtype=np.int64)
        return {"submit": submit, "nodes": J["nodes"][idx], "limit_s": J["limit_s"][idx],
                "run": J["run"][idx], "user": J["user"][idx], "tprio": J["tprio"][idx],
                "id": ids, "dep": dep, "source": int(source)}

    def _week_block(self, rng, now: int, H: int) -> tuple[np.ndarray, np.ndarray, int]:
        lo, hi = self.span_
        sub = self.arrival_jobs_["submit"]
        # source windows (s, s + H] inside the training span, s = now - m weeks (same hours of
        # the week); without one (a span shorter than a week + H), any s in the span
        m_min = -((-(now - (hi - H))) // WEEK_S)  # ceil
        m_max = (now - lo) // WEEK_S
        clear = None
        if getattr(self, "holes_", ()) and m_min <= m_max:
            # only the windows that touch no hole (without holes: the draw of the next branch)
            s_all = now - np.arange(m_min, m_max + 1, dtype=np.int64) * WEEK_S
            ok = np.ones(len(s_all), dtype=bool)
            for a, b in self.holes_:
                ok &= (s_all + H <= a) | (s_all >= b)
            clear = s_all[ok] if ok.any() else None
        if clear is not None:
            s = int(clear[int(rng.integers(0, len(clear)))])
        elif m_min <= m_max:
            s = now - int(rng.integers(m_min, m_max + 1)) * WEEK_S
        elif hi - H > lo:
            s = int(rng.integers(lo, hi - H + 1))
        else:
            s = lo  # the span is shorter than the horizon: its jobs once, no more
        a, b = np.searchsorted(sub, [s, s + H], side="right")
        idx = np.arange(a, b)
        return idx, sub[idx] - s + now, s

    def _poisson(self, rng, now: int, H: int) -> tuple[np.ndarray, np.ndarray]:
        order, bounds = self.hour_jobs_
        idx, subs = [], []
        t = now
        while t < now + H:
            span = min(HOUR_S, now + H - t)
            h = int(hour_of_week(t))
            n_in = bounds[h + 1] - bounds[h]
            if n_in:
                k = rng.poisson(self.hour_rate_[h] * span / HOUR_S)
                if k:
                    idx.append(order[bounds[h] + rng.integers(0, n_in, k)])
                    subs.append(t + 1 + rng.integers(0, span, k))
            t += span
        if not idx:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(idx), np.concatenate(subs).astype(np.int64)

    # ---- futures ---------------------------------------------------------------------------
    def rng_for(self, view: QueueView, k: int) -> np.random.Generator:
        self._fitted()
        return np.random.default_rng([self.seed_, int(view.now), int(view.chain_nodes), int(k)])

    def draw_future(self, view: QueueView, rng: np.random.Generator, _supports=None) -> QueueFuture:
        """One future of ``view``: runtimes of its running jobs (each beyond its elapsed time) and
        pending jobs, and the arrivals over the horizon."""
        self._fitted()
        if _supports is None:
            _supports = self._view_supports(view)
        run_sup, pend_sup = _supports
        running_run = self._draw_runs(rng, run_sup, view.running_limit_s, view.running_elapsed_s)
        pending_run = self._draw_runs(rng, pend_sup, view.pending_limit_s,
                                      np.zeros(view.n_pending, np.int64))
        arr = self.draw_arrivals(rng, view.now, view.capacity)
        return QueueFuture(
            running_run=running_run, pending_run=pending_run, arrival_submit=arr["submit"],
            arrival_nodes=arr["nodes"], arrival_limit_s=arr["limit_s"], arrival_run=arr["run"],
            arrival_user=arr["user"], arrival_tprio=arr["tprio"], succ_tprio=self.succ_tprio_,
            arrival_id=arr["id"], arrival_dep=arr["dep"])

    def _view_supports(self, view: QueueView):
        return (self._supports(view.running_user, view.running_limit_s, view.running_elapsed_s),
                self._supports(view.pending_user, view.pending_limit_s,
                               np.zeros(view.n_pending, np.int64)))

    # ---- the decision ----------------------------------------------------------------------
    @property
    def tolerance_h(self) -> float:
        """An interruption up to this long counts as none: the successor then starts within a
        scheduler pass of the predecessor's end (in a drawn world the predecessor ends at its
        limit and the successor follows it seconds later, as a reactive handover does)."""
        return float(self.tolerance_s) / HOUR_S

    def quantile_rule(self, x_h: np.ndarray) -> bool:
        """Submit iff the tau quantile of the drawn x (hours; +inf: not started within the
        simulated span) exceeds the tolerance."""
        x = np.asarray(x_h, dtype=np.float64)
        return bool(np.quantile(x, self.quantile_level, method="inverted_cdf") > self.tolerance_h)

    def _settled(self, n_pos: int, n_nonpos: int) -> bool | None:
        """The decision all K draws would give, once these counts already fix it; else None."""
        K = int(self.K)
        m = int(np.ceil(self.quantile_level * K - 1e-9))  # the quantile is the m-th smallest of K
        if n_nonpos >= m:
            return False
        if n_pos >= K - m + 1:
            return True
        return None

    def gated(self, view: QueueView) -> bool:
        """True when ``gate_h`` says wait without simulating (the predecessor is pending, or
        has more than gate_h hours left)."""
        g = self.gate_h
        if g is None:
            return False
        return (not view.pred_running) or (view.pred_end - view.now) > float(g) * HOUR_S

    def plan_future(self, view: QueueView) -> QueueFuture:
        """The scheduler's plan as a future: every job runs to its limit, nothing arrives."""
        self._fitted()
        none = np.zeros(0, np.int64)
        return QueueFuture(
            running_run=np.maximum(np.asarray(view.running_limit_s, np.int64),
                                   np.asarray(view.running_elapsed_s, np.int64) + 1),
            pending_run=np.asarray(view.pending_limit_s, np.int64).copy(),
            arrival_submit=none, arrival_nodes=none, arrival_limit_s=none, arrival_run=none,
            arrival_user=np.zeros(0, dtype=object), arrival_tprio=np.zeros(0),
            succ_tprio=self.succ_tprio_, arrival_id=none, arrival_dep=none, plan=True)

    def plan_allows(self, view: QueueView, simulate) -> bool:
        """The plan veto (``plan_veto``, as the ``*_tuned`` policies' veto on Slurm's plan):
        submitting now is allowed only where the plan (:meth:`plan_future`) starts the
        successor no earlier than the predecessor's end; never while the predecessor waits."""
        if not view.pred_running:
            return False
        return bool(self._x_now(view, self.plan_future(view), simulate,
                                cap_s=int(self.tolerance_s)) >= 0.0)

    def _x_now(self, view: QueueView, future: QueueFuture, simulate, cap_s: int) -> float:
        """x_h of the successor submitted now in ``future``, by whichever engine function the
        rule simulates with (the others answer it as their first candidate)."""
        call = self.engine_call
        if call == "simulate_leads":
            return float(simulate(view, future, offsets_s=np.zeros(1, np.int64), cap_s=cap_s)[0])
        if call == "simulate_pair":
            return float(simulate(view, future, step_s=int(self.step_s), cap_s=cap_s)[0])
        return float(simulate(view, future, cap_s=cap_s))

    def evaluate_view(self, view: QueueView, simulate) -> tuple[bool, np.ndarray]:
        """``(submit now?, x_h of the K draws)``; x is NaN for draws not simulated (gate, early
        stop). ``simulate(view, future, cap_s=...)`` returns one draw's x_h (+inf when the
        successor has not started ``cap_s`` after the predecessor's end)."""
        self._fitted()
        K = int(self.K)
        x = np.full(K, np.nan)
        if self.gated(view):
            return False, x
        if self.plan_veto and not self.plan_allows(view, simulate):
            return False, x
        supports = self._view_supports(view)
        sign_only = bool(self.sign_only)
        # only whether x exceeds the tolerance matters to the rule: simulate that far
        cap_s = int(self.tolerance_s) if sign_only else int(round(float(self.cap_h) * HOUR_S))
        n_pos = n_nonpos = 0
        for k in range(K):
            future = self.draw_future(view, self.rng_for(view, k), supports)
            x[k] = float(simulate(view, future, cap_s=cap_s))
            if x[k] > self.tolerance_h:
                n_pos += 1
            else:
                n_nonpos += 1
            if self.early_stop:
                settled = self._settled(n_pos, n_nonpos)
                if settled is not None:
                    return settled, x
        return self.quantile_rule(x), x

    def evaluate_pair(self, view: QueueView, simulate_pair) -> tuple[bool, np.ndarray]:
        """The ``expected`` rule: ``(submit now?, (K, 2) x_h now and one step later)``. Each draw
        is simulated twice with common random numbers (``simulate_pair(view, future,
        step_s=..., cap_s=...) -> (x_now, x_next)``); submit iff the mean cost of submitting
        now is below that of waiting one step."""
        self._fitted()
        K = int(self.K)
        x = np.full((K, 2), np.nan)
        if self.gated(view) or (self.plan_veto and not self.plan_allows(view, simulate_pair)):
            return False, x
        supports = self._view_supports(view)
        cap_s = int(round(float(self.cap_h) * HOUR_S))
        for k in range(K):
            future = self.draw_future(view, self.rng_for(view, k), supports)
            x[k] = simulate_pair(view, future, step_s=int(self.step_s), cap_s=cap_s)
        now, wait = cost(x, float(self.c_I), float(self.c_O)).mean(axis=0)
        return bool(now < wait), x

    def lead_offsets(self, view: QueueView) -> np.ndarray:
        """The submit times the ``plan`` rule compares, as offsets from now (s): now, then
        1, 2, 4, 8, ... steps later, the same steps before the predecessor's end, and the end
        itself (the reactive submit). The steps before the end matter: a successor whose start
        a big job's end fixes hours ahead starts early from any submit until shortly before the
        end, and starts late from the end; without them the rule compares only "early" with
        "late" and submits early (real ls6 March, 8 nodes: a submit 10.7 h to 1.5 h before
        the end starts 1.0-1.25 h early, one from 1.3 h to 10 min before it on time, one at the
        end 3.7 h late; from 10.7 h out the candidates reached 5.3 h, then the end)."""
        left = max(int(view.pred_end) - int(view.now), 0)
        step = int(self.step_s)
        offs = {0}
        m = 1
        while m * step < left:
            offs.update((m * step, left - m * step))
            m *= 2
        if left > 0:
            offs.add(left)
        return np.asarray(sorted(offs), dtype=np.int64)

    def evaluate_plan(self, view: QueueView, simulate_leads) -> tuple[bool, np.ndarray]:
        """The ``plan`` rule: ``(submit now?, (K, J) x_h of each candidate submit time)``. Each
        draw is simulated once forward with the successor submitted at each of
        :meth:`lead_offsets` (``simulate_leads(view, future, offsets_s=..., cap_s=...)``,
        common random numbers); submit iff submitting now has the lowest mean cost (ties
        submit: a later submit would cost no less). While the predecessor waits, wait."""
        self._fitted()
        K = int(self.K)
        if not view.pred_running or self.gated(view) or (
                self.plan_veto and not self.plan_allows(view, simulate_leads)):
            return False, np.full((K, 1), np.nan)
        offsets = self.lead_offsets(view)
        supports = self._view_supports(view)
        cap_s = int(round(float(self.cap_h) * HOUR_S))
        x = np.full((K, len(offsets)), np.nan)
        for k in range(K):
            future = self.draw_future(view, self.rng_for(view, k), supports)
            x[k] = simulate_leads(view, future, offsets_s=offsets, cap_s=cap_s)
        return plan_submit_now(x, self.c_I, self.c_O), x

    @property
    def engine_call(self) -> str:
        """The engine function of mirage.twin.world the rule needs: ``simulate_x`` (quantile),
        ``simulate_pair`` (expected) or ``simulate_leads`` (plan)."""
        return _RULES[self.rule][1]

    def simulator(self, cluster):
        """The engine function the rule needs (:attr:`engine_call`), bound to ``cluster``."""
        return partial(getattr(world, self.engine_call), cluster=cluster)

    def evaluate(self, view: QueueView, simulate) -> tuple[bool, np.ndarray]:
        """``(submit now?, the draws' x_h)`` by the configured rule; ``simulate``: the engine's
        function named by :attr:`engine_call` (:meth:`simulator`)."""
        return getattr(self, _RULES[self.rule][0])(view, simulate)

    def decide_view(self, view: QueueView, simulate) -> bool:
        return self.evaluate(view, simulate)[0]

    def decide(self, obs: Observation) -> bool:
        """Submit now? As every policy is asked; ``obs.queue`` holds the queue view (a
        :class:`QueueObservation`: ``needs_queue``), simulated in the description the twin was
        fitted with (``fit(..., cluster=...)``, as :func:`mirage.twin.live.load_twin` does)."""
        view = getattr(obs, "queue", None)
        if view is None:
            raise TwinPolicyError("twin decides from the observable queue, which this observation "
                                  "lacks. Fix: pass a QueueObservation with queue=<QueueView>")
        if getattr(self, "cluster_", None) is None:
            raise TwinPolicyError("twin: no cluster description to simulate the drawn futures in. "
                                  "Fix: fit it with cluster=<ClusterDescription> (load_twin does)")
        return self.decide_view(view, self.simulator(self.cluster_))

    # ---- the table interface: the twin needs the queue, which the sample tables lack ---------
    def submit_mask(self, points, windows=None):
        raise TwinPolicyError(
            "twin decides from the observable queue, which the sample tables do not hold. "
            "Fix: evaluate it with mirage.twin.replay.run_twin (or call decide with a "
            "QueueObservation)")


__all__ = ["QueueObservation", "TwinPolicy", "TwinPolicyError", "SERVICE_NAME", "hour_of_week",
           "plan_submit_now"]
