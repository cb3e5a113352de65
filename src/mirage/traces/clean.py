"""Cleaning a raw trace into the canonical *clean* job table, losing nothing.

Every data row of the input is either kept or quarantined with one named reason (the first
check it fails, in the order of ``CHECKS``), so ``rows_in == rows_kept + sum(quarantined)``.
Kept rows may be *adjusted* (a runtime above the limit is clipped to it, an unlimited limit is
filled); adjustments are counted in the report, never silent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from mirage.traces.read import RawTrace, read_trace
from mirage.traces.schema import conform

#: Semantic checks on parsed rows, in the order they are applied (first failure names the row).
CHECKS = (
    "never_started",  # no start time: cancelled or still pending when the dump was taken
    "not_ended",  # started but no end: still running when the dump was taken
    "start_before_submit",
    "end_before_start",
    "nonpositive_nodes",
    "nonpositive_limit",
    "duplicate_id",  # second and later rows of a job id (the first row is kept)
)

#: Reasons a reader can give before the semantic checks (see mirage.traces.read).
PARSE_REASONS = (
    "malformed_row",  # wrong number of fields
    "separator_row",
    "repeated_header",
    "missing_job_id",
    "job_step",  # sacct step rows (123.batch); the job's own row carries the allocation
    "unparseable_time",
    "unparseable_limit",
    "unparseable_nodes",
    "unparseable_number",
)


def clean(raw: RawTrace, *, fill_limit_min: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Return ``(clean_jobs, quarantine, report)`` for a raw trace.

    ``fill_limit_min`` replaces unlimited/absent limits; default: the largest finite limit in
    the trace (so such jobs are treated like the longest regular jobs).
    """
    jobs = raw.jobs.copy()
    reason = pd.Series(pd.NA, index=jobs.index, dtype="string")

    def flag(mask, why: str) -> None:
        mask = pd.Series(mask, index=jobs.index).fillna(False).astype(bool)
        reason[mask & reason.isna()] = why

    flag(jobs["start"].isna(), "never_started")
    flag(jobs["end"].isna(), "not_ended")
    flag(jobs["start"] < jobs["submit"], "start_before_submit")
    flag(jobs["end"] < jobs["start"], "end_before_start")
    flag(jobs["nodes"] < 1, "nonpositive_nodes")
    flag(jobs["time_limit_min"] < 1, "nonpositive_limit")
    # Duplicates are judged among otherwise valid rows, so a broken first copy does not
    # push out a good second one.
    valid = reason.isna()
    flag(valid & jobs["job_id"].where(valid).duplicated(keep="first"), "duplicate_id")

    bad = reason.notna().to_numpy()
    q_sem = pd.DataFrame(
        {
            "line": jobs.loc[bad, "line"].astype("Int64"),
            "reason": reason[bad].astype("string"),
            "raw": raw.raw_text[bad].astype("string"),
        }
    )
    quarantine = pd.concat([raw.quarantine, q_sem], ignore_index=True)
    quarantine = quarantine.sort_values("line", kind="stable").reset_index(drop=True)
    kept = jobs.loc[~bad].copy()

    adjusted = {"limit_filled": 0, "runtime_clipped": 0}
    unlimited = kept["time_limit_min"].isna()
    if unlimited.any():
        finite = kept["time_limit_min"].dropna()
        fill = fill_limit_min or (int(finite.max()) if len(finite) else 2880)
        kept.loc[unlimited, "time_limit_min"] = fill
        adjusted["limit_filled"] = int(unlimited.sum())
    limit = pd.to_timedelta(kept["time_limit_min"].astype("int64"), unit="min")
    over = (kept["end"] - kept["start"]) > limit
    kept.loc[over, "end"] = (kept.loc[over, "start"] + limit[over]).astype("datetime64[s]")
    adjusted["runtime_clipped"] = int(over.sum())
    # Slurm records Eligible at one-second resolution and sometimes a hair outside
    # [submit, start] (a requeue, a clock step); outside that range it cannot be the truth.
    adjusted["eligible_clipped"] = 0
    if "eligible" in kept and kept["eligible"].notna().any():
        e = kept["eligible"]
        inside = e.clip(lower=kept["submit"], upper=kept["start"])
        moved = e.notna() & (inside != e)
        kept["eligible"] = inside.astype("datetime64[s]")
        adjusted["eligible_clipped"] = int(moved.sum())

    kept = conform(kept.sort_values(["submit", "line"], kind="stable"))
    counts = quarantine["reason"].value_counts()
    report = {
        "rows_in": int(raw.rows_in),
        "rows_kept": int(len(kept)),
        "quarantined": {str(k): int(v) for k, v in sorted(counts.items())},
        "adjusted": adjusted,
        "format": raw.format,
        "layout": raw.layout,
        **({"reader": raw.meta} if raw.meta else {}),
        "span": _span(kept),
    }
    assert report["rows_in"] == report["rows_kept"] + sum(report["quarantined"].values()), report
    return kept, quarantine, report


def clean_trace(
    path: str | Path, *, cluster: str, fmt: str = "auto", procs_per_node: int | None = None,
    fill_limit_min: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Read and clean one trace file; the report also names the input and its sha256."""
    raw = read_trace(path, cluster=cluster, fmt=fmt, procs_per_node=procs_per_node)
    kept, quarantine, report = clean(raw, fill_limit_min=fill_limit_min)
    report = {"input": str(path), "sha256": sha256_file(path), "cluster": cluster, **report}
    return kept, quarantine, report


def write_outputs(kept, quarantine, report, out, report_path, quarantine_path=None) -> Path:
    """Write the clean table, the quarantine side file and the JSON report; returns the side file."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    kept.to_parquet(out, index=False)
    qpath = Path(quarantine_path) if quarantine_path else out.with_name(out.stem + ".quarantine.csv")
    qpath.parent.mkdir(parents=True, exist_ok=True)
    quarantine.to_csv(qpath, index=False)
    report = {**report, "quarantine_file": str(qpath)}
    Path(report_path).parent.mkdir(parents=True, exist_ok=True)
    Path(report_path).write_text(json.dumps(report, indent=2) + "\n")
    return qpath


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _span(kept: pd.DataFrame) -> dict:
    if kept.empty:
        return {"first_submit": None, "last_submit": None, "max_nodes": None}
    return {
        "first_submit": str(kept["submit"].min()),
        "last_submit": str(kept["submit"].max()),
        "max_nodes": int(np.max(kept["nodes"])),
    }
