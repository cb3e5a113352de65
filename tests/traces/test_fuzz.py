"""Property-based fuzzing of every reader: only TraceFormatError escapes, and the row-count
invariant ``rows_in == rows_kept + sum(quarantined)`` holds on arbitrary input."""

import string
from datetime import datetime, timedelta

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mirage.errors import TraceFormatError
from mirage.traces.clean import CHECKS, PARSE_REASONS, clean_trace

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

TACC_HEADER = "JobID JobName UID Start Submit End Priority TimelimitR ExitCode NNodes"
SACCT_COLUMNS = ["JobID", "JobIDRaw", "JobName", "User", "Submit", "Start", "End", "Timelimit",
                 "TimelimitRaw", "NNodes", "State", "ExitCode", "Priority", "Partition"]

BASE = datetime(2023, 1, 1)

# Values close to the real ones, plus the junk that turns up in dumps.
token = st.one_of(
    st.sampled_from([
        "2023-01-01T10:00:00", "2023-01-01T09:00:00", "2023-01-02T10:00:00", "2023-13-45T99:99:99",
        "Unknown", "None", "", "UNLIMITED", "Partition_Limit", "2-00:00:00", "1-12", "45", "0",
        "-1", "2880", "1e400", "nan", "123.batch", "123_[1-5]", "5_3", "0:0", "CANCELLED by 0",
        "99999999999999999999999", "12:30", "x|y", "\t", "  ", "\ufffd",
    ]),
    st.integers(min_value=-10, max_value=10**6).map(str),
    st.text(alphabet=string.printable, max_size=12),
)


def _stamp(minutes: int) -> str:
    return (BASE + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S")


# A plausible TACC row (JobID JobName UID Start Submit End Priority TimelimitR ExitCode NNodes)
# with one field sometimes replaced by junk, so both the happy and the refusing paths run.
def _tacc_row(jid, sub, wait, run, limit, nodes, junk_at, junk):
    row = [str(jid), "job", "00001", _stamp(sub + wait), _stamp(sub), _stamp(sub + wait + run),
           "1000", str(limit), "0:0", str(nodes)]
    if junk_at < len(row):
        row[junk_at] = junk
    return row


valid_row = st.builds(
    _tacc_row, st.integers(1, 40), st.integers(0, 10**5), st.integers(-30, 3000),
    st.integers(-30, 3000), st.integers(-1, 3000), st.integers(-1, 70), st.integers(0, 30), token,
)


def _check(path):
    """Returns the number of kept rows (0 when the file was refused as a whole)."""
    try:
        kept, quarantine, report = clean_trace(path, cluster="fuzz")
    except TraceFormatError as err:
        assert str(path) in str(err) and "Fix:" in str(err)
        return 0
    assert report["rows_in"] == report["rows_kept"] + sum(report["quarantined"].values())
    assert len(kept) == report["rows_kept"] and len(quarantine) == sum(report["quarantined"].values())
    assert kept["job_id"].is_unique
    assert set(report["quarantined"]) <= set(CHECKS) | set(PARSE_REASONS), "undocumented reason"
    return len(kept)


@SETTINGS
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes(tmp_path, data):
    path = tmp_path / "trace.log"
    path.write_bytes(data)
    _check(path)


@SETTINGS
@given(text=st.text(max_size=2000))
def test_arbitrary_text(tmp_path, text):
    path = tmp_path / "trace.log"
    path.write_text(text)
    _check(path)


@SETTINGS
@given(
    rows=st.lists(st.one_of(valid_row, st.lists(token, min_size=8, max_size=12)), max_size=30),
    sep=st.sampled_from(["\t", " ", "   "]),
    count_line=st.booleans(),
    dashes=st.booleans(),
)
def test_tacc_like(tmp_path, rows, sep, count_line, dashes):
    lines = ([str(len(rows) + 2)] if count_line else []) + [TACC_HEADER]
    if dashes:
        lines.append(" ".join("-" * len(h) for h in TACC_HEADER.split()))
    lines += [sep.join(r) for r in rows]
    path = tmp_path / "trace.log"
    path.write_text("\n".join(lines))
    event(f"kept rows: {min(_check(path), 3)}")


@SETTINGS
@given(
    columns=st.permutations(SACCT_COLUMNS).map(lambda c: c[:10]),
    rows=st.lists(st.lists(token, min_size=9, max_size=11), max_size=30),
    trailing=st.booleans(),
)
def test_sacct_like(tmp_path, columns, rows, trailing):
    end = "|" if trailing else ""
    lines = ["|".join(columns) + end] + ["|".join(r) + end for r in rows]
    path = tmp_path / "dump.txt"
    path.write_text("\n".join(lines))
    _check(path)


swf_value = st.one_of(st.integers(min_value=-1, max_value=10**6).map(str), st.sampled_from(["-1", "1.5", "x", "1e308", "inf"]))


@SETTINGS
@given(
    header=st.lists(st.sampled_from([
        "; UnixStartTime: 1675209600", "; UnixStartTime: -5", "; UnixStartTime: x",
        "; TimeZoneString: Europe/Berlin", "; TimeZoneString: Mars/Olympus", "; MaxNodes: 4",
        "; MaxProcs: 16", "; MaxProcs: 0", ";",
    ]), max_size=5),
    rows=st.lists(st.lists(swf_value, min_size=16, max_size=19), max_size=30),
)
def test_swf_like(tmp_path, header, rows):
    path = tmp_path / "log.swf"
    path.write_text("\n".join(header + [" ".join(r) for r in rows]))
    _check(path)
