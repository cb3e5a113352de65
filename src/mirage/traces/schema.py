"""The canonical job table every trace source is read into.

One row per job (never per step). Times are naive local wall-clock times of the cluster,
as the sources record them, at one-second resolution. Columns:

=================  ===================  ========  =====================================================
column             dtype                nullable  meaning
=================  ===================  ========  =====================================================
cluster            string               no        cluster key from the config (``ls6``, ``frontera``...)
job_id             string               no        the job's id as the source writes it (``123``,
                                                  ``123_4`` for an array task)
user               string               yes       user name or anonymised UID
name               string               yes       job name
submit             datetime64[s]        no        submit time
start              datetime64[s]        yes       start time (null: never started; only in raw reads)
end                datetime64[s]        yes       end time (null: never ended; only in raw reads)
time_limit_min     Int64                yes       requested wall-time limit, minutes (null: unlimited)
nodes              Int64                no        nodes allocated (requested when never started)
exit_code          string               yes       ``code:signal`` as Slurm writes it
priority           Int64                yes       priority recorded by the scheduler
state              string               yes       final state where the source records it
depends_on         string               yes       job id this job waited for (SWF "preceding job")
eligible           datetime64[s]        yes       when the job became eligible to start (sacct
                                                  ``Eligible``: later than submit for held jobs, a
                                                  ``--begin`` time or a dependency); null: unknown
line               Int64                no        1-based line of the row in the source file
=================  ===================  ========  =====================================================

A *clean* table (``mirage trace clean``) additionally guarantees: ``start`` and ``end``
non-null, ``submit <= start <= end``, ``end - start <= time_limit_min`` (clipped),
``nodes >= 1``, ``time_limit_min >= 1``, ``submit <= eligible <= start`` where eligible is
known (clipped), ``job_id`` unique; rows sorted by ``submit, job_id``.
"""

from __future__ import annotations

import pandas as pd

TIME_UNIT = "datetime64[s]"

COLUMNS: dict[str, str] = {
    "cluster": "string",
    "job_id": "string",
    "user": "string",
    "name": "string",
    "submit": TIME_UNIT,
    "start": TIME_UNIT,
    "end": TIME_UNIT,
    "time_limit_min": "Int64",
    "nodes": "Int64",
    "exit_code": "string",
    "priority": "Int64",
    "state": "string",
    "depends_on": "string",
    "eligible": TIME_UNIT,
    "line": "Int64",
}

#: Columns a clean table must have non-null in every row.
REQUIRED_CLEAN = ("cluster", "job_id", "submit", "start", "end", "time_limit_min", "nodes", "line")

#: Columns of the quarantine side file: where the row was, why it was refused, and the row.
QUARANTINE_COLUMNS: dict[str, str] = {"line": "Int64", "reason": "string", "raw": "string"}


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """Return ``df`` with exactly the canonical columns, in order, with canonical dtypes.

    Missing optional columns are added as all-null.
    """
    out = pd.DataFrame(index=df.index)
    for col, dtype in COLUMNS.items():
        if col in df.columns:
            series = df[col]
        else:
            series = pd.Series(pd.NA if dtype != TIME_UNIT else pd.NaT, index=df.index)
        if dtype == TIME_UNIT:
            out[col] = pd.to_datetime(series).astype(TIME_UNIT)
        else:
            out[col] = series.astype(dtype)
    return out.reset_index(drop=True)


def empty_quarantine() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in QUARANTINE_COLUMNS.items()})
