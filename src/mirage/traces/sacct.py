"""Readers for header-based Slurm accounting tables.

Two physical layouts carry the same columns:

* ``sacct --parsable2`` (or ``--parsable``) dumps: ``|``-separated, header on the first line,
  any column order, Slurm's own value formats;
* the TACC text traces published with the paper: what plain ``sacct`` prints, either with
  TAB-separated data rows (``ls6-a100.log``) or whitespace-aligned fixed-width rows, with or
  without a leading line-count line, a header line and a row of dashes.

Both are tokenised into (line, fields) rows and then parsed by one column mapper, so every
value format is handled the same way whatever the layout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from mirage.errors import TraceFormatError
from mirage.traces.fields import parse_ints, parse_limit_minutes, parse_times
from mirage.traces.textfile import Line

# Header names (lower-case) -> canonical column, in order of preference per column.
ALIASES: dict[str, tuple[str, ...]] = {
    "job_id": ("jobid", "jobidraw"),
    "name": ("jobname",),
    "user": ("user", "uid"),
    "submit": ("submit",),
    "start": ("start",),
    "end": ("end",),
    # TimelimitR is plain sacct's truncation of TimelimitRaw (minutes).
    "time_limit_min": ("timelimitraw", "timelimitr", "timelimit"),
    "nodes": ("nnodes", "allocnodes", "reqnodes"),
    "exit_code": ("exitcode",),
    "priority": ("priority",),
    "state": ("state",),
    "eligible": ("eligible",),
}
REQUIRED = ("job_id", "submit", "start", "end", "time_limit_min", "nodes")

_DASHES = re.compile(r"^[-\s]+$")
_COUNT = re.compile(r"^\s*\d+\s*$")


@dataclass
class Tokenised:
    header: list[str]
    header_line: int
    layout: str
    rows: list[tuple[int, list[str] | None, str, str | None]]  # (line, fields, raw, reason)


def is_header(text: str) -> bool:
    tokens = {t.lower() for t in re.split(r"[|\s]+", text.strip()) if t}
    return "jobid" in tokens or "jobidraw" in tokens


def _skip_preamble(lines: list[Line]) -> int:
    """Index of the header line: skips a leading line-count line (TACC files start with one)."""
    i = 0
    if i < len(lines) and _COUNT.match(lines[i].text) and len(lines) > 1:
        i += 1
    return i


def tokenise(lines: list[Line], path) -> Tokenised:
    h = _skip_preamble(lines)
    if h >= len(lines) or not is_header(lines[h].text):
        where = lines[h] if h < len(lines) else lines[-1]
        raise TraceFormatError(
            path,
            f"expected a header line naming JobID, found {where.text[:60]!r}",
            "give a sacct dump with its header (sacct --parsable2 -o JobID,Submit,...) or a TACC "
            "trace; or pass --format",
            line=where.number,
        )
    head = lines[h]
    if "|" in head.text:
        return _tokenise_parsable(lines, h)
    return _tokenise_text(lines, h)


def _tokenise_parsable(lines: list[Line], h: int) -> Tokenised:
    header = lines[h].text.rstrip().split("|")
    # --parsable (unlike --parsable2) ends every line with a delimiter; its header shows it.
    trailing = len(header) > 1 and header[-1] == ""
    if trailing:
        header = header[:-1]
    rows = []
    for ln in lines[h + 1 :]:
        fields = ln.text.rstrip("\r\n").split("|")
        if trailing and len(fields) > 1 and fields[-1].strip() == "":
            fields = fields[:-1]
        rows.append(_check_row(ln, fields, header))
    return Tokenised(header, lines[h].number, "parsable2" if not trailing else "parsable", rows)


def _tokenise_text(lines: list[Line], h: int) -> Tokenised:
    header = lines[h].text.split()
    body = lines[h + 1 :]
    spans = None
    if body and _DASHES.match(body[0].text):
        spans = [m.span() for m in re.finditer(r"-+", body[0].text)]
        if len(spans) != len(header):
            spans = None
        body = body[1:]
    rows = []
    tabbed = 0
    for ln in body:
        if "\t" in ln.text:
            tabbed += 1
            fields = [f.strip() for f in ln.text.split("\t")]
        else:
            fields = ln.text.split()
            # Names with blanks break a whitespace split; the dashes row gives the columns.
            if len(fields) != len(header) and spans is not None:
                fields = [ln.text[a:b].strip() for a, b in _widened(spans, len(ln.text))]
        rows.append(_check_row(ln, fields, header))
    layout = "tab" if tabbed * 2 > len(body) else ("fixed-width" if spans else "whitespace")
    return Tokenised(header, lines[h].number, layout, rows)


def _widened(spans, length):
    # Slice from the start of one column to the start of the next so right-aligned values and
    # values that overflow their column by a few characters still land in the right field.
    starts = [a for a, _ in spans]
    ends = starts[1:] + [max(length, spans[-1][1])]
    return list(zip([0] + starts[1:], ends))


def _check_row(ln: Line, fields: list[str], header: list[str]):
    if _DASHES.match(ln.text):
        return (ln.number, None, ln.text, "separator_row")
    if is_header(ln.text) and [f.strip().lower() for f in fields] == [c.lower() for c in header]:
        return (ln.number, None, ln.text, "repeated_header")
    if len(fields) != len(header):
        return (ln.number, None, ln.text, "malformed_row")
    return (ln.number, fields, ln.text, None)


def column_map(header: list[str], header_line: int, path) -> dict[str, int]:
    lowered = [c.strip().lower() for c in header]
    mapping: dict[str, int] = {}
    for canon, names in ALIASES.items():
        for name in names:
            if name in lowered:
                mapping[canon] = lowered.index(name)
                break
    missing = [c for c in REQUIRED if c not in mapping]
    if missing:
        wanted = {c: ALIASES[c][0] for c in missing}
        raise TraceFormatError(
            path,
            f"the header lacks the column(s) {', '.join(wanted.values())} "
            f"(found: {', '.join(header)})",
            "dump with e.g. `sacct --parsable2 -o JobID,JobName,User,Submit,Start,End,"
            "TimelimitRaw,NNodes,ExitCode,Priority,State`",
            line=header_line,
        )
    return mapping


def parse(tok: Tokenised, path, cluster: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Turn tokenised rows into (jobs, quarantine); jobs may still have null start/end."""
    mapping = column_map(tok.header, tok.header_line, path)
    q_lines, q_reasons, q_raw = [], [], []
    good_lines, good_raw, good_fields = [], [], []
    for number, fields, raw, reason in tok.rows:
        if reason:
            q_lines.append(number)
            q_reasons.append(reason)
            q_raw.append(raw)
        else:
            good_lines.append(number)
            good_raw.append(raw)
            good_fields.append(fields)

    cols = {c: pd.Series([f[i] for f in good_fields], dtype="string") for c, i in mapping.items()}
    n = len(good_fields)
    df = pd.DataFrame({"line": pd.Series(good_lines, dtype="Int64")})
    reason = pd.Series([None] * n, dtype="object")

    def flag(mask: pd.Series, why: str) -> None:
        fresh = mask.to_numpy() & reason.isna().to_numpy()
        reason[fresh] = why

    job_id = cols["job_id"].str.strip()
    flag(job_id.isna() | (job_id == ""), "missing_job_id")
    # Steps (123.batch, 123.0, 123.extern) repeat their job's allocation; the job row counts.
    flag(job_id.str.contains(".", regex=False).fillna(False), "job_step")
    df["job_id"] = job_id
    for col in ("submit", "start", "end"):
        df[col], bad = parse_times(cols[col])
        flag(bad, "unparseable_time")
    flag(df["submit"].isna(), "unparseable_time")
    df["time_limit_min"], bad = parse_limit_minutes(cols["time_limit_min"])
    flag(bad, "unparseable_limit")
    df["nodes"], bad = parse_ints(cols["nodes"], allow_null=False)
    flag(bad, "unparseable_nodes")
    if "eligible" in cols:
        # informative like Priority: "Unknown" (or an odd value) is null, not a lost row
        df["eligible"], _ = parse_times(cols["eligible"])
    if "priority" in cols:
        # Priority is informative only: an odd value becomes null rather than costing the row.
        df["priority"], _ = parse_ints(cols["priority"])
    for col in ("user", "name", "exit_code", "state"):
        if col in cols:
            df[col] = cols[col].str.strip()
    if "state" in df:
        # "CANCELLED by 123" -> CANCELLED: the suffix names who cancelled, not the state.
        df["state"] = df["state"].str.split(" ").str[0]
    df["cluster"] = cluster
    df["raw"] = pd.Series(good_raw, dtype="string")

    bad_rows = reason.notna().to_numpy()
    quarantine = pd.DataFrame(
        {
            "line": pd.Series(q_lines + list(df["line"][bad_rows]), dtype="Int64"),
            "reason": pd.Series(q_reasons + list(reason[bad_rows]), dtype="string"),
            "raw": pd.Series(q_raw + [good_raw[i] for i in range(n) if bad_rows[i]], dtype="string"),
        }
    )
    return df[~bad_rows], quarantine
