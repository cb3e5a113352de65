"""Writing a canonical job table back out as a TACC text trace (the ls6 tab layout).

The synthetic traces are written in this layout so that they pass through exactly the same
reader and cleaner as the real ones.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mirage.errors import MirageError

#: columns of a canonical table that the TACC layout has no field for: a table that holds any of
#: them is refused rather than written without them (a dependency chain dropped on the way out
#: changes every start a simulator predicts for the trace)
NOT_IN_LAYOUT = ("depends_on", "eligible", "state")

HEADER = ("JobID", "JobName", "UID", "Start", "Submit", "End", "Priority", "TimelimitR", "ExitCode", "NNodes")
WIDTHS = (12, 10, 6, 19, 19, 19, 10, 10, 8, 8)


def write_tacc(jobs: pd.DataFrame, path: str | Path,
               dropping: tuple[str, ...] = ()) -> dict[str, int]:
    """Write ``jobs`` like ``ls6-a100.log``: count line, padded header, dashes, TAB rows.

    A column the layout cannot carry (``NOT_IN_LAYOUT``) that holds values is left out only if
    the caller names it in ``dropping``; otherwise the table is refused (:class:`MirageError`),
    naming the fix: write it as ``.parquet``, which keeps every column. Returns the columns left
    out and how many rows had a value in each."""
    held = {c: int(jobs[c].notna().sum()) for c in NOT_IN_LAYOUT if c in jobs}
    held = {c: n for c, n in held.items() if n}
    lost = {c: n for c, n in held.items() if c not in dropping}
    if lost:
        raise MirageError(
            f"{path}: the TACC text layout has no field for "
            + ", ".join(f"{c} ({n} of {len(jobs)} jobs)" for c, n in lost.items())
            + "; written as text the trace would lose them. Fix: write it as .parquet "
            "(every column kept, read by every mirage command that reads a trace)")

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
    return held
