"""A synthetic SampleSet with a known signal, for tests, docs and smoke runs.

Each sample has a load level L (hours) and a slowly varying queue wait
w(t) = L * (1 + 0.3 sin(2 pi t / 24 h + phase)). Submitting the successor at t gives the
wait W(t) = max(0, w(t) + noise), and x = W(t) - (pred_end - t). ``f_load_h`` observes w(t)
with 10 % noise, so a model that reads it can beat any fixed lead; ``f_avg100_wait_h`` is a
cruder per-sample average (what the reference's average baseline sees); ``f_free_nodes`` is
noise; ``f_plan_wait_h`` is the scheduler's plan, which like Slurm's overestimates the wait
(running jobs are assumed to run to their limits): 1.2 W(t) plus noise. Column 0 of every history step carries w as well, so history models can learn too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mirage.outcomes import STATE_WIDTH, WINDOW, SampleSet
from mirage.units import DAY_S, DECISION_STEP_S, HOUR_S

STEP = np.timedelta64(DECISION_STEP_S, "s")


def make_synthetic(n_train: int = 60, n_val: int = 30, seed: int = 0, history: bool = True,
                   clusters=("synth-a", "synth-b"), max_pred_wait_h: float = 12.0,
                   noise_h: float = 0.3) -> SampleSet:
    rng = np.random.default_rng(seed)
    # a stream of its own, so the plan column leaves every other column as it was
    plan_rng = np.random.default_rng([seed, 1])
    base = np.datetime64("2023-01-01T00:00:00", "s")
    samples, points, hists = [], [], []
    for i in range(n_train + n_val):
        split = "train" if i < n_train else "validation"
        level = rng.choice(3, p=[0.4, 0.35, 0.25])
        L = [rng.uniform(0.1, 2.0), rng.uniform(2.0, 10.0), rng.uniform(12.0, 24.0)][level]
        phase = rng.uniform(0, 2 * np.pi)
        n_pending = int(rng.integers(0, int(max_pred_wait_h * 6) + 1))
        sample_start = base + i * np.timedelta64(4 * HOUR_S, "s")
        pred_submit = sample_start + np.timedelta64(2 * DAY_S, "s")
        pred_start = pred_submit + n_pending * STEP
        pred_end = pred_start + np.timedelta64(48 * HOUR_S, "s")
        n = n_pending + 288 + 1
        k = np.arange(n)
        t = pred_submit + k * STEP
        th = (k - n + 1) / 6.0  # hours relative to pred_end (<= 0)
        remaining = -th
        w = L * (1 + 0.3 * np.sin(2 * np.pi * th / 24.0 + phase))
        W = np.maximum(0.0, w + rng.normal(0, noise_h + 0.05 * L, n))
        x = W - remaining
        running = k >= n_pending
        samples.append({
            "sample_id": i, "cluster": clusters[i % len(clusters)], "split": split,
            "chain_nodes": int(rng.choice([1, 8])), "sample_start": sample_start,
            "pred_submit": pred_submit, "pred_start": pred_start, "pred_end": pred_end,
            "n_points": n,
        })
        points.append(pd.DataFrame({
            "sample_id": i, "k": k, "t": t, "x_h": x, "pred_running": running,
            "pred_elapsed_h": np.where(running, (k - n_pending) / 6.0, 0.0),
            "pred_wait_h": np.minimum(k, n_pending) / 6.0,
            "pred_remaining_h": np.where(running, remaining, np.nan),
            "f_load_h": w * (1 + rng.normal(0, 0.1, n)),
            "f_avg100_wait_h": np.full(n, L * rng.uniform(0.7, 1.3)),
            "f_free_nodes": rng.integers(0, 80, n).astype(float),
            "f_plan_wait_h": np.maximum(0.0, 1.2 * W + plan_rng.normal(0, 0.2, n)),
            "f_pred_remaining_h": np.where(running, remaining, 48.0),
        }))
        if history:
            kk = np.arange(n + WINDOW - 1) - (WINDOW - 1)
            thh = (kk - n + 1) / 6.0
            H = rng.normal(0, 1, (len(kk), STATE_WIDTH)).astype(np.float32)
            H[:, 0] = L * (1 + 0.3 * np.sin(2 * np.pi * thh / 24.0 + phase))
            H[:, 38] = np.clip(-thh, 0, 48)  # predecessor elapsed-like clock
            hists.append(H)
    samples = pd.DataFrame(samples)
    for c in ("sample_start", "pred_submit", "pred_start", "pred_end"):
        samples[c] = samples[c].astype("datetime64[s]")
    points = pd.concat(points, ignore_index=True)
    points["t"] = points["t"].astype("datetime64[s]")
    if not history:
        return SampleSet(samples, points)
    offsets = np.concatenate([[0], np.cumsum([len(h) for h in hists])]).astype(np.int64)
    return SampleSet(samples, points, np.concatenate(hists), offsets,
                     samples["sample_id"].to_numpy())
