"""Scenarios for the simulator tests: hand-built job tables and tiny cluster descriptions
(a plain module; the fixtures are in tests/conftest.py)."""

from __future__ import annotations


import pandas as pd

from mirage.sim import Backfill, ClusterDescription, JobTable, Priority

T0 = pd.Timestamp("2023-01-01T00:00:00")


def make_table(jobs: list[dict]) -> JobTable:
    """Jobs as dicts with minutes from T0: submit, run, limit (default run), nodes (1), user
    ("u0"), prio (1000), start (recorded; default submit), id (default its index)."""
    rows = []
    for k, j in enumerate(jobs):
        submit = T0 + pd.Timedelta(minutes=j["submit"])
        start = T0 + pd.Timedelta(minutes=j.get("start", j["submit"]))
        run = j["run"]
        rows.append({
            "cluster": "test", "job_id": str(j.get("id", k)), "user": j.get("user", "u0"),
            "name": f"j{k}", "submit": submit, "start": start,
            "end": start + pd.Timedelta(minutes=run), "time_limit_min": j.get("limit", run),
            "nodes": j.get("nodes", 1), "exit_code": "0:0", "priority": j.get("prio", 1000),
            "state": "COMPLETED", "depends_on": j.get("depends_on"), "line": k + 1,
        })
    df = pd.DataFrame(rows)
    df["submit"] = df["submit"].astype("datetime64[s]")
    df["start"] = df["start"].astype("datetime64[s]")
    df["end"] = df["end"].astype("datetime64[s]")
    df["time_limit_min"] = df["time_limit_min"].astype("Int64")
    df["nodes"] = df["nodes"].astype("Int64")
    df["priority"] = df["priority"].astype("Int64")
    df["depends_on"] = df["depends_on"].astype("string")
    return JobTable.from_frame(df)


def make_cluster(nodes: int = 4, *, mode: str = "conservative", interval_s: int = 0,
                 resolution_s: int = 60, window_min: int = 7 * 1440, w_age: float = 1000.0,
                 max_age_s: int = 7 * 86400, w_size: float = 0.0, w_trace: float = 0.0,
                 max_jobs=None, max_nodes=None, capacity=(), warm: bool = True,
                 deps: bool = False) -> ClusterDescription:
    return ClusterDescription(
        cluster="test", nodes=nodes, capacity=tuple(capacity),
        priority=Priority(weight_age=w_age, max_age_s=max_age_s, weight_size=w_size,
                          weight_trace=w_trace),
        backfill=Backfill(mode=mode, interval_s=interval_s, window_min=window_min,
                          resolution_s=resolution_s, max_job_test=1000),
        max_jobs_per_user=max_jobs, max_nodes_per_user=max_nodes, warm_start=warm,
        infer_dependencies=deps,
    )


def minutes(t: int) -> float:
    """Epoch seconds -> minutes after T0."""
    return (t - int(T0.value // 10**9)) / 60
