"""Reading a trace into the simulator's :class:`JobTable`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mirage.errors import MirageError

from .jobs import JobTable


class TraceNotFound(MirageError):
    pass


def load_table(source, cluster: str) -> JobTable:
    """A clean job table from a DataFrame, a clean ``.parquet`` table, or a raw trace file
    (cleaned with :func:`mirage.traces.clean.clean_trace`)."""
    if isinstance(source, JobTable):
        return source
    if isinstance(source, pd.DataFrame):
        return JobTable.from_frame(source)
    path = Path(source)
    if not path.is_file():
        raise TraceNotFound(f"{path}: no such trace file. Fix: pass an existing trace or clean table")
    if path.suffix == ".parquet":
        return JobTable.from_frame(pd.read_parquet(path))
    from mirage.traces.clean import clean_trace

    kept, _, _ = clean_trace(path, cluster=cluster)
    return JobTable.from_frame(kept)
