"""Vectorised parsing of the field formats Slurm and the TACC traces write.

Each parser takes a column of raw strings and returns the parsed values plus a boolean mask of
the entries that could not be parsed, so the caller can quarantine exactly those rows with a
reason instead of guessing.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from mirage.units import DAY_S, HOUR_S

#: Time tokens that mean "no such time" (never started / still running), not a parse error.
NULL_TIMES = frozenset({"", "unknown", "none", "n/a", "nan", "null"})

#: Limit tokens that mean "no finite limit"; the cleaner fills these (and says so in its report).
UNLIMITED = frozenset({"unlimited", "partition_limit", "infinite", "none", ""})

# [days-]hours:minutes:seconds and the other layouts Slurm accepts for --time.
_DURATION = re.compile(
    r"^(?:(?P<d>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?"
    r"|(?P<h>\d+):(?P<m>\d+):(?P<s>\d+)"
    r"|(?P<mm>\d+):(?P<ss>\d+)"
    r"|(?P<min>\d+))$"
)

# Largest value we accept in an integer column; beyond it a value is garbage, not a count.
_INT_MAX = 2**53


def parse_times(raw: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Parse ISO-8601-like local times (``2023-03-09T12:48:05`` or with a space).

    Returns ``(times, bad)``: ``times`` is datetime64[s] with NaT for null tokens and for bad
    entries; ``bad`` marks entries that are neither a time nor a null token.
    """
    s = raw.astype("string").str.strip()
    is_null = s.isna() | s.str.lower().isin(NULL_TIMES)
    # Accept only the layouts Slurm writes; anything else (e.g. "tomorrow") is an error.
    shaped = s.str.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}").fillna(False)
    parsed = pd.to_datetime(
        s.where(shaped & ~is_null).str.replace(" ", "T", regex=False),
        format="%Y-%m-%dT%H:%M:%S",
        errors="coerce",
    )
    bad = ~is_null & parsed.isna()
    return parsed.astype("datetime64[s]"), bad.astype(bool)


def parse_ints(raw: pd.Series, *, allow_null: bool = True) -> tuple[pd.Series, pd.Series]:
    """Parse integer columns. Blank entries are null; non-integers and absurd values are bad."""
    s = raw.astype("string").str.strip()
    is_null = s.isna() | (s == "")
    num = pd.to_numeric(s.where(~is_null), errors="coerce")
    ok = num.notna() & np.isfinite(num.astype("float64")) & (num.abs() < _INT_MAX)
    ok &= (num.astype("float64") % 1 == 0) | ~num.notna()
    bad = ~is_null & ~ok
    if not allow_null:
        bad |= is_null
    values = num.where(ok & ~is_null).astype("Float64").astype("Int64")
    return values, bad.astype(bool)


def parse_limit_minutes(raw: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Parse a time limit in minutes from TimelimitRaw (``2880``) or Timelimit (``2-00:00:00``).

    Unlimited tokens give null (not bad). Seconds are rounded up to the next minute, as Slurm
    does when it enforces a limit.
    """
    s = raw.astype("string").str.strip()
    lowered = s.str.lower()
    unlimited = s.isna() | lowered.isin(UNLIMITED)
    parts = s.where(~unlimited).str.extract(_DURATION)
    matched = parts.notna().any(axis=1)

    def col(name: str) -> pd.Series:
        return pd.to_numeric(parts[name], errors="coerce").fillna(0).astype("float64")

    seconds = (
        col("d") * DAY_S
        + col("dh") * HOUR_S
        + col("dm") * 60
        + col("ds")
        + col("h") * HOUR_S
        + col("m") * 60
        + col("s")
        + col("mm") * 60
        + col("ss")
        + col("min") * 60
    )
    minutes = np.ceil(seconds / 60.0)
    ok = matched & (minutes < _INT_MAX)
    bad = ~unlimited & ~ok
    values = pd.Series(minutes, index=s.index).where(ok & ~unlimited).astype("Float64").astype("Int64")
    return values, bad.astype(bool)
