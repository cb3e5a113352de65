"""Reading any supported trace file into the canonical job table.

``read_trace`` detects the format (or takes it from the caller), tokenises and parses every
data row. Rows that cannot be parsed are returned in a quarantine table with a reason, so
``rows_in == len(jobs) + len(quarantine)`` holds for every file that can be read at all; a file
that cannot be read at all raises :class:`~mirage.errors.TraceFormatError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mirage.errors import TraceFormatError
from mirage.traces import sacct, swf
from mirage.traces.schema import conform, empty_quarantine
from mirage.traces.textfile import read_lines

FORMATS = ("auto", "tacc", "sacct", "swf", "parquet")


@dataclass
class RawTrace:
    """What a reader got out of a file, before semantic cleaning."""

    jobs: pd.DataFrame  # canonical columns; start/end may be null
    quarantine: pd.DataFrame  # line, reason, raw
    rows_in: int
    format: str
    layout: str
    meta: dict = field(default_factory=dict)
    raw_text: pd.Series | None = None  # source line of each row of ``jobs``, for the side file


def detect_format(path: str | Path) -> str:
    """``tacc``, ``sacct`` or ``swf`` (or ``parquet`` for a canonical table)."""
    if Path(path).suffix == ".parquet":
        return "parquet"
    return _detect(read_lines(path), path)


def _detect(lines, path) -> str:
    if swf.looks_like_swf(lines):
        return "swf"
    head = lines[1] if len(lines) > 1 and lines[0].text.strip().isdigit() else lines[0]
    if sacct.is_header(head.text):
        return "sacct" if "|" in head.text else "tacc"
    raise TraceFormatError(
        path,
        f"unknown trace format; the first line is {lines[0].text[:60]!r}",
        "give a TACC trace, a `sacct --parsable2` dump with its header, or an SWF file, "
        "or name the format with --format {tacc,sacct,swf}",
        line=lines[0].number,
    )


def read_trace(
    path: str | Path, *, cluster: str, fmt: str = "auto", procs_per_node: int | None = None
) -> RawTrace:
    if fmt not in FORMATS:
        raise TraceFormatError(path, f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    if fmt == "parquet" or (fmt == "auto" and Path(path).suffix == ".parquet"):
        return _read_parquet(path, cluster)
    lines = read_lines(path)
    if fmt == "auto":
        fmt = _detect(lines, path)
    if fmt == "swf":
        data = [ln for ln in lines if not ln.text.lstrip().startswith(";")]
        jobs, quarantine, meta = swf.parse(lines, path, cluster, procs_per_node)
        layout = "swf"
    else:
        tok = sacct.tokenise(lines, path)
        data = tok.rows
        jobs, quarantine = sacct.parse(tok, path, cluster)
        layout, meta = tok.layout, {}
    if not data:
        raise TraceFormatError(path, "has a header but no data rows", "check that the dump completed")
    raw_text = jobs["raw"].astype("string").reset_index(drop=True)
    return RawTrace(conform(jobs), quarantine, len(data), fmt, layout, meta, raw_text)


def _read_parquet(path, cluster: str) -> RawTrace:
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a bad file
        raise TraceFormatError(
            path, f"is not a readable parquet file ({type(exc).__name__})", "give a canonical job table"
        ) from None
    missing = {"job_id", "submit", "start", "end", "time_limit_min", "nodes"} - set(df.columns)
    if missing:
        raise TraceFormatError(
            path, f"parquet table lacks columns {sorted(missing)}", "see mirage.traces.schema"
        )
    if "line" not in df:
        df["line"] = range(1, len(df) + 1)
    df["cluster"] = cluster
    jobs = conform(df)
    raw_text = jobs.astype("string").fillna("").agg("\t".join, axis=1)
    return RawTrace(jobs, empty_quarantine(), len(jobs), "parquet", "canonical", {}, raw_text)
