"""Table-based evaluation equals a direct closed-loop simulation of the same policy."""

import numpy as np
import pandas as pd
import pytest

from mirage.policies.baselines import Average, FixedLead, Reactive
from mirage.samples.closed_loop import run_closed_loop
from mirage.samples.generate import SampleSpec, generate_sample
from mirage.sim import JobTable, load_cluster
from mirage.sim.synth import synthesize


@pytest.fixture(scope="module")
def world():
    jobs = synthesize("ls6", start="2023-01-01", days=12, seed=3)
    table = JobTable.from_frame(jobs)
    profile = load_cluster("ls6")
    specs = [SampleSpec(i, "ls6", "validation", nodes, pd.Timestamp(t))
             for i, (nodes, t) in enumerate([(1, "2023-01-03"), (8, "2023-01-04 08:00"), (8, "2023-01-05 16:00")])]
    samples = {s.sample_id: generate_sample(table, profile, s) for s in specs}
    return table, profile, specs, samples


@pytest.mark.parametrize("policy", [Reactive(), Average(), FixedLead(lead_h=3, tune=False),
                                    FixedLead(lead_h=30, tune=False)], ids=lambda p: repr(p))
def test_table_equals_closed_loop(world, policy):
    table, profile, specs, samples = world
    for spec in specs:
        points = samples[spec.sample_id]["points"]
        k_table = policy.first_submit(points, samples[spec.sample_id]["history"])
        k_loop, x_loop = run_closed_loop(table, profile, spec, policy)
        assert k_loop == k_table
        assert x_loop == pytest.approx(points["x_h"].iloc[k_table], abs=1e-9)


def test_sample_structure(world):
    _, _, specs, samples = world
    for spec in specs:
        out = samples[spec.sample_id]
        points, sample = out["points"], out["sample"]
        assert list(points["k"]) == list(range(len(points)))
        assert points["t"].iloc[-1] == sample["pred_end"]  # the last point is the reactive one
        assert np.all(np.diff(points["t"].to_numpy()).astype("timedelta64[s]").astype(int) <= 600)
        assert out["history"].shape == (len(points) + 143, 42)
        assert points["x_h"].notna().all()
        # a successor submitted long before the predecessor ends starts long before it ends
        running = points[points["pred_running"]]
        assert (running["x_h"] >= -running["pred_remaining_h"] - 1e-9).all()
