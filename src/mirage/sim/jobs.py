"""The trace as the simulator reads it: plain integer arrays, sorted by submit time.

Times are integer seconds since the Unix epoch of the cluster's naive local clock (the trace's
own clock; no time zone is applied, so what goes in comes out unchanged).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mirage.errors import MirageError

NO_DEP = -1


class SimInputError(MirageError):
    """A job table cannot be simulated (missing column, unclean rows)."""


def to_seconds(t) -> int:
    """A timestamp-like value (str, datetime, numpy datetime64, int seconds) as int epoch seconds."""
    if isinstance(t, (int, np.integer)):
        return int(t)
    return int(np.datetime64(pd.Timestamp(t).to_datetime64(), "s").astype(np.int64))


def to_timestamp(s: int) -> pd.Timestamp:
    return pd.Timestamp(np.datetime64(int(s), "s"))


@dataclass(frozen=True, eq=False)
class JobTable:
    """Column arrays of one clean trace, in submit order. Index ``i`` is the job's id in the sim."""

    job_id: np.ndarray  # object (str)
    submit: np.ndarray  # int64 s
    start: np.ndarray  # int64 s, recorded start
    end: np.ndarray  # int64 s, recorded end
    limit: np.ndarray  # int64 s
    run: np.ndarray  # int64 s, recorded runtime capped at the limit
    nodes: np.ndarray  # int64
    user: np.ndarray  # int64 code into ``users``
    tprio: np.ndarray  # float64, recorded priority (0 where missing)
    dep: np.ndarray  # int64 index of the job this one waits for, NO_DEP if none
    users: tuple = field(default=())
    # int64 s: when the job became eligible (recorded Eligible, else its submit); None = submit
    eligible: np.ndarray | None = None
    # the recorded-priority component of a job inserted without one (the service's: Simulator.
    # insert_job, what_if); None = the median of ``tprio`` (the trace's typical job). A table
    # whose jobs are not all the trace's (a drawn world) keeps the trace's value here
    inserted_tprio: float | None = None

    def __len__(self) -> int:
        return len(self.submit)

    @property
    def n(self) -> int:
        return len(self.submit)

    def index_of(self, job_id: str) -> int:
        hits = np.flatnonzero(self.job_id == str(job_id))
        if len(hits) == 0:
            raise SimInputError(f"job {job_id!r} is not in the trace. Fix: pass a job_id the table holds")
        return int(hits[0])

    def user_code(self, user) -> int:
        """The code of a user name; unknown names get a fresh code past the trace's users."""
        if user is None:
            return -1
        try:
            return self.users.index(str(user))
        except ValueError:
            # deterministic across processes (str hash is salted)
            return len(self.users) + zlib.crc32(str(user).encode()) % 1_000_000

    def with_deps(self, dep: np.ndarray) -> "JobTable":
        return JobTable(**{**self.__dict__, "dep": np.asarray(dep, dtype=np.int64)})

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> "JobTable":
        """Build from a clean canonical job table (see ``mirage.traces.schema``)."""
        need = ("job_id", "submit", "start", "end", "time_limit_min", "nodes")
        missing = [c for c in need if c not in df.columns]
        if missing:
            raise SimInputError(
                f"job table lacks columns {missing}. Fix: pass the clean table from "
                "mirage.traces.clean.clean_trace"
            )
        if df[list(need)].isna().any().any():
            raise SimInputError(
                "job table has null submit/start/end/limit/nodes. Fix: simulate only a clean table "
                "(mirage trace clean drops such rows to quarantine)"
            )
        d = df.sort_values(["submit", "job_id"], kind="stable").reset_index(drop=True)

        def secs(col):
            return d[col].to_numpy(dtype="datetime64[s]").astype(np.int64)

        submit, start, end = secs("submit"), secs("start"), secs("end")
        limit = d["time_limit_min"].to_numpy(dtype=np.int64) * 60
        if (start < submit).any() or (end < start).any():
            raise SimInputError("job table has start < submit or end < start. Fix: clean the trace first")
        run = np.minimum(end - start, limit)
        user_s = d["user"].astype("string").fillna("?") if "user" in d else pd.Series(["?"] * len(d))
        codes, uniques = pd.factorize(user_s, sort=True)
        tprio = (
            d["priority"].astype("Float64").fillna(0).to_numpy(dtype=np.float64)
            if "priority" in d
            else np.zeros(len(d))
        )
        job_ids = d["job_id"].astype(str).to_numpy(dtype=object)
        dep = np.full(len(d), NO_DEP, dtype=np.int64)
        if "depends_on" in d and d["depends_on"].notna().any():
            pos = {j: i for i, j in enumerate(job_ids)}
            for i, v in enumerate(d["depends_on"]):
                if pd.notna(v) and str(v) in pos:
                    dep[i] = pos[str(v)]
        return cls(
            job_id=job_ids,
            submit=submit,
            start=start,
            end=end,
            limit=limit,
            run=run,
            nodes=d["nodes"].to_numpy(dtype=np.int64),
            user=codes.astype(np.int64),
            tprio=tprio,
            dep=dep,
            users=tuple(str(u) for u in uniques),
            eligible=_eligible(d, submit, start),
        )


def _eligible(d: pd.DataFrame, submit: np.ndarray, start: np.ndarray) -> np.ndarray | None:
    """Recorded eligible times within [submit, start]; None when the source has none."""
    if "eligible" not in d or not d["eligible"].notna().any():
        return None
    e = d["eligible"].to_numpy(dtype="datetime64[s]")
    known = ~np.isnat(e)
    out = submit.copy()
    out[known] = e[known].astype(np.int64)
    return np.clip(out, submit, start)
