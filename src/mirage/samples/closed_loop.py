"""Closed-loop provisioning: a policy decides inside a running simulation.

The reference semantics the sample tables must reproduce: at every decision point the policy
sees the state and either waits or submits; a submit inserts the real successor into the
simulation, which then runs until it starts. Table-based evaluation (one what-if per point,
precomputed) must give the same outcome; ``tests/samples/test_closed_loop.py`` checks that it does.
"""

from __future__ import annotations

from mirage.policies.base import Observation, Policy
from mirage.samples.generate import CHAIN_LIMIT_MIN, MAX_WAIT_S, Episode, SampleSpec
from mirage.sim import SERVICE_USER, JobTable
from mirage.units import HOUR_S


def run_closed_loop(table: JobTable, cluster, spec: SampleSpec, policy: Policy) -> tuple[int, float]:
    """``(k, x_h)``: the decision point where ``policy`` submitted and the outcome in hours."""
    ep = Episode(table, cluster, spec)
    for t, row in ep:
        start = ep.pred_start()
        reactive = start >= 0 and t >= start + ep.limit_s  # the last point submits regardless
        obs = Observation(row, ep.window() if policy.needs_history else None)
        if reactive or policy.decide(obs):
            succ = ep.sim.insert_job(t, spec.chain_nodes, CHAIN_LIMIT_MIN * 60, user=SERVICE_USER)
            if not ep.sim.run_until(t + MAX_WAIT_S, stop_jid=succ):
                raise RuntimeError(f"sample {spec}: the successor did not start within 30 days")
            ep.sim.run_until(ep.sim.starts[succ])
            if ep.pred_start() < 0:  # submitted while the predecessor was still queued
                ep.sim.run_until(t + MAX_WAIT_S, stop_jid=ep.pred)
            pred_end = ep.pred_start() + ep.limit_s
            return int(row["k"]), (ep.sim.starts[succ] - pred_end) / HOUR_S
    raise AssertionError("unreachable: the predecessor's end always submits")

