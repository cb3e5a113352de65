"""Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive.

18 whitespace-separated numeric fields per job, ``-1`` for unknown; header comments start with
``;`` and may give ``UnixStartTime``, ``TimeZoneString``, ``MaxNodes`` and ``MaxProcs``.
Times in the file are seconds since ``UnixStartTime``; we convert them to the cluster's local
wall-clock time (``TimeZoneString``, else UTC), like the other sources. SWF counts processors,
not nodes: ``procs_per_node`` converts (default ``MaxProcs / MaxNodes`` from the header, else 1).
"""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd

from mirage.errors import TraceFormatError
from mirage.traces.textfile import Line

N_FIELDS = 18
# Field positions (0-based) from the SWF definition.
JOB, SUBMIT, WAIT, RUN, ALLOC_PROCS, REQ_PROCS, REQ_TIME, STATUS, USER, EXE, PRECEDING = (
    0, 1, 2, 3, 4, 7, 8, 10, 11, 13, 16,
)
STATUS_NAMES = {0: "FAILED", 1: "COMPLETED", 5: "CANCELLED"}
_HEADER = re.compile(r"^\s*;\s*(\w+)\s*:\s*(.*?)\s*$")
_MAX_SECONDS = 10**10  # ~300 years: beyond it a time offset is garbage


def looks_like_swf(lines: list[Line]) -> bool:
    first = lines[0].text.lstrip()
    if first.startswith(";"):
        return True
    fields = first.split()
    return len(fields) == N_FIELDS and all(_is_number(f) for f in fields)


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def header_fields(lines: list[Line]) -> dict[str, str]:
    out = {}
    for ln in lines:
        if not ln.text.lstrip().startswith(";"):
            break
        m = _HEADER.match(ln.text)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def parse(
    lines: list[Line], path, cluster: str, procs_per_node: int | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    head = header_fields(lines)
    epoch = _header_int(head, "UnixStartTime", path, default=0)
    if not 0 <= epoch < _MAX_SECONDS:
        raise TraceFormatError(
            path, f"UnixStartTime {epoch} is not a plausible epoch", "correct the `; UnixStartTime:` line"
        )
    tz = _zone(head.get("TimeZoneString"), path)
    ppn = procs_per_node or _default_ppn(head)
    if ppn < 1:
        raise TraceFormatError(path, f"procs_per_node must be >= 1, got {ppn}", "pass a positive --procs-per-node")

    body = [ln for ln in lines if not ln.text.lstrip().startswith(";")]
    q_lines, q_reason, q_raw = [], [], []
    good_lines, good_raw, values = [], [], []
    for ln in body:
        fields = ln.text.split()
        if len(fields) != N_FIELDS:
            q_lines.append(ln.number), q_reason.append("malformed_row"), q_raw.append(ln.text)
            continue
        try:
            nums = [float(f) for f in fields]
        except ValueError:
            q_lines.append(ln.number), q_reason.append("unparseable_number"), q_raw.append(ln.text)
            continue
        if not all(np.isfinite(nums)) or any(abs(v) > _MAX_SECONDS for v in nums):
            q_lines.append(ln.number), q_reason.append("unparseable_number"), q_raw.append(ln.text)
            continue
        good_lines.append(ln.number), good_raw.append(ln.text), values.append(nums)

    a = np.array(values, dtype="float64").reshape(-1, N_FIELDS)
    known = lambda col: a[:, col] >= 0  # noqa: E731 - SWF's -1 means unknown
    submit_s = np.where(known(SUBMIT), epoch + a[:, SUBMIT], np.nan)
    started = known(WAIT) & known(RUN)
    start_s = np.where(started, submit_s + a[:, WAIT], np.nan)
    end_s = np.where(started, start_s + a[:, RUN], np.nan)
    procs = np.where(known(ALLOC_PROCS) & (a[:, ALLOC_PROCS] > 0), a[:, ALLOC_PROCS], a[:, REQ_PROCS])
    nodes = np.where(procs > 0, np.ceil(procs / ppn), np.nan)
    limit = np.where(known(REQ_TIME) & (a[:, REQ_TIME] > 0), np.ceil(a[:, REQ_TIME] / 60), np.nan)
    limit = np.where(a[:, REQ_TIME] == 0, 0, limit)  # a zero limit is a value, cleaned later

    df = pd.DataFrame(
        {
            "cluster": cluster,
            "job_id": pd.Series([_fmt_int(v) for v in a[:, JOB]], dtype="string"),
            "user": pd.Series([_fmt_int(v) if v >= 0 else None for v in a[:, USER]], dtype="string"),
            "name": pd.Series([f"exe{_fmt_int(v)}" if v >= 0 else None for v in a[:, EXE]], dtype="string"),
            "submit": _to_local(submit_s, tz),
            "start": _to_local(start_s, tz),
            "end": _to_local(end_s, tz),
            "time_limit_min": pd.array(np.where(np.isnan(limit), None, limit), dtype="Float64").astype("Int64"),
            "nodes": pd.array(np.where(np.isnan(nodes), None, nodes), dtype="Float64").astype("Int64"),
            "state": pd.Series([STATUS_NAMES.get(int(v)) for v in a[:, STATUS]], dtype="string"),
            "depends_on": pd.Series(
                [_fmt_int(v) if v > 0 else None for v in a[:, PRECEDING]], dtype="string"
            ),
            "line": pd.Series(good_lines, dtype="Int64"),
            "raw": pd.Series(good_raw, dtype="string"),
        }
    )
    reason = np.full(len(df), None, dtype=object)
    reason[np.isnan(submit_s)] = "unparseable_time"
    reason[(reason == None) & np.isnan(nodes)] = "unparseable_nodes"  # noqa: E711
    bad = reason != None  # noqa: E711
    quarantine = pd.DataFrame(
        {
            "line": pd.Series(q_lines + list(df["line"][bad]), dtype="Int64"),
            "reason": pd.Series(q_reason + list(reason[bad]), dtype="string"),
            "raw": pd.Series(q_raw + [r for r, b in zip(good_raw, bad) if b], dtype="string"),
        }
    )
    meta = {"procs_per_node": ppn, "unix_start_time": epoch, "time_zone": str(tz)}
    return df[~bad], quarantine, meta


def _fmt_int(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


def _header_int(head: dict, key: str, path, default: int) -> int:
    if key not in head:
        return default
    try:
        return int(float(head[key]))
    except ValueError:
        raise TraceFormatError(
            path, f"SWF header field {key} is not a number: {head[key]!r}", f"correct the `; {key}:` line"
        ) from None


def _default_ppn(head: dict) -> int:
    try:
        procs, nodes = int(head["MaxProcs"]), int(head["MaxNodes"])
    except (KeyError, ValueError):
        return 1
    return procs // nodes if nodes > 0 and procs >= nodes and procs % nodes == 0 else 1


def _zone(name: str | None, path):
    if not name:
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise TraceFormatError(
            path, f"unknown TimeZoneString {name!r}", "use an IANA zone name such as America/Chicago"
        ) from None


def _to_local(seconds: np.ndarray, tz) -> pd.Series:
    ts = pd.to_datetime(pd.Series(seconds), unit="s", utc=True)
    return ts.dt.tz_convert(tz).dt.tz_localize(None).astype("datetime64[s]")
