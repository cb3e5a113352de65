"""Writing a canonical job table back out as a TACC text trace (the ls6 tab layout).

The synthetic traces are written in this layout so that they pass through exactly the same
reader and cleaner as the real ones.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

HEADER = ("JobID", "JobName", "UID", "Start", "Submit", "End", "Priority", "TimelimitR", "ExitCode", "NNodes")
WIDTHS = (12, 10, 6, 19, 19, 19, 10, 10, 8, 8)


def write_tacc(jobs: pd.DataFrame, path: str | Path) -> None:
    """Write ``jobs`` like ``ls6-a100.log``: count line, padded header, dashes, TAB rows."""

    def times(col: str) -> pd.Series:
        return jobs[col].dt.strftime("%Y-%m-%dT%H:%M:%S").fillna("Unknown")

    def text(col: str, default: str = "") -> pd.Series:
        return jobs[col].astype("string").fillna(default) if col in jobs else pd.Series(default, index=jobs.index)

    cols = [
        text("job_id"), text("name"), text("user"), times("start"), times("submit"), times("end"),
        text("priority", "0"), text("time_limit_min"), text("exit_code", "0:0"), text("nodes"),
    ]
    rows = pd.concat(cols, axis=1).astype(str).agg("\t".join, axis=1)
    header = " ".join(h.rjust(w) for h, w in zip(HEADER, WIDTHS))
    dashes = " ".join("-" * w for w in WIDTHS)
    lines = [str(len(rows) + 2), header, dashes, *rows.tolist()]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(lines) + "\n")
