"""Readers on the real ls6 trace and on hand-made files of every format and layout."""

import pandas as pd
import pytest
from paths import DATA

from mirage.errors import TraceFormatError
from mirage.traces.clean import clean_trace
from mirage.traces.read import detect_format, read_trace
from mirage.traces.schema import COLUMNS, REQUIRED_CLEAN


def _invariant(report):
    assert report["rows_in"] == report["rows_kept"] + sum(report["quarantined"].values())


def test_real_ls6_counts(ls6_path):
    kept, quarantine, report = clean_trace(ls6_path, cluster="ls6")
    assert report["rows_in"] == 24777
    assert report["rows_kept"] == 24776
    assert report["quarantined"] == {"malformed_row": 1}
    assert report["sha256"] == "e1ff7c8e9fde480a21ea698c56e1e874a1f0179ecf007e03c63d9d3d78a6a942"
    assert (report["format"], report["layout"]) == ("tacc", "tab")
    row = quarantine.iloc[0]
    assert row["raw"].startswith("746545\t") and row["line"] == 19706
    # the clean-table guarantees
    assert list(kept.columns) == list(COLUMNS)
    assert kept[list(REQUIRED_CLEAN)].notna().all().all()
    assert (kept["start"] >= kept["submit"]).all() and (kept["end"] >= kept["start"]).all()
    runtime_min = (kept["end"] - kept["start"]).dt.total_seconds() / 60
    assert (runtime_min <= kept["time_limit_min"].astype(float)).all()
    assert kept["job_id"].is_unique
    assert kept["nodes"].between(1, 64).all()
    assert kept["time_limit_min"].mode().iloc[0] == 2880  # the 48 h peak
    assert kept["submit"].is_monotonic_increasing
    assert kept["submit"].min() == pd.Timestamp("2022-10-05 11:52:48")


def test_tacc_tab_with_count_line():
    kept, q, report = clean_trace(DATA / "tacc_tab.log", cluster="t")
    _invariant(report)
    assert report["layout"] == "tab"
    assert list(kept["job_id"]) == ["101", "102", "103"]
    assert report["quarantined"] == {"malformed_row": 1}
    assert q.iloc[0]["line"] == 7
    # job 102 ran 48 h 5 min on a 48 h limit: clipped and counted
    assert report["adjusted"]["runtime_clipped"] == 1
    assert kept.set_index("job_id").loc["102", "end"] == pd.Timestamp("2023-01-03T11:00:00")
    first = kept.iloc[0]
    assert (first["user"], first["name"], first["priority"], first["exit_code"]) == ("00001", "job.a", 1000, "0:0")


def test_tacc_fixed_width_header_on_line_one():
    raw = read_trace(DATA / "tacc_fixed.log", cluster="f")
    assert (raw.format, raw.layout) == ("tacc", "fixed-width")
    assert raw.rows_in == 3
    names = list(raw.jobs["name"])
    assert names[0] == "train v2"  # a blank inside a name survives via the dashes row
    kept, q, report = clean_trace(DATA / "tacc_fixed.log", cluster="f")
    assert report["quarantined"] == {"never_started": 1}
    assert kept.iloc[0]["nodes"] == 4 and kept.iloc[0]["time_limit_min"] == 2880


def test_tacc_whitespace_without_dashes():
    kept, _, report = clean_trace(DATA / "tacc_whitespace.log", cluster="w")
    assert report["layout"] == "whitespace"
    _invariant(report)
    assert report["quarantined"] == {"end_before_start": 1}
    assert list(kept["job_id"]) == ["300001"]


def test_sacct_parsable2_slurm_formats():
    assert detect_format(DATA / "sacct_parsable2.txt") == "sacct"
    kept, q, report = clean_trace(DATA / "sacct_parsable2.txt", cluster="s")
    _invariant(report)
    assert report["rows_in"] == 11
    assert report["quarantined"] == {
        "job_step": 2,
        "never_started": 2,  # the pending array range and the cancelled job with Start=None
        "not_ended": 1,
        "unparseable_time": 1,
    }
    jobs = kept.set_index("job_id")
    assert list(jobs.index) == ["5001", "5002_1", "5002_2", "5020", "5021"]
    assert jobs.loc["5001", "time_limit_min"] == 2880  # 2-00:00:00
    assert jobs.loc["5002_1", "time_limit_min"] == 60  # 01:00:00
    assert jobs.loc["5001", "user"] == "alice" and jobs.loc["5001", "state"] == "TIMEOUT"
    # UNLIMITED and Partition_Limit are filled with the largest finite limit, and counted
    assert report["adjusted"]["limit_filled"] == 2
    assert jobs.loc["5020", "time_limit_min"] == 2880
    assert q.loc[q["reason"] == "job_step", "line"].tolist() == [3, 4]


def test_sacct_parsable_trailing_pipe_and_semantic_reasons():
    kept, q, report = clean_trace(DATA / "sacct_parsable.txt", cluster="s")
    _invariant(report)
    assert report["quarantined"] == {
        "start_before_submit": 1,
        "end_before_start": 1,
        "nonpositive_nodes": 1,
        "nonpositive_limit": 1,
        "duplicate_id": 1,
    }
    assert list(kept["job_id"]) == ["7"]
    assert q.loc[q["reason"] == "duplicate_id", "line"].tolist() == [7]


def test_swf_header_timezone_and_procs_per_node():
    assert detect_format(DATA / "sample.swf") == "swf"
    raw = read_trace(DATA / "sample.swf", cluster="w")
    assert raw.meta["procs_per_node"] == 4  # MaxProcs 16 / MaxNodes 4
    kept, q, report = clean_trace(DATA / "sample.swf", cluster="w")
    _invariant(report)
    assert report["quarantined"] == {"malformed_row": 1, "never_started": 1}
    jobs = kept.set_index("job_id")
    # 1675209600 = 2023-02-01T00:00:00Z = 2023-01-31T18:00:00 in Chicago
    assert jobs.loc["1", "submit"] == pd.Timestamp("2023-01-31T18:00:00")
    assert jobs.loc["1", "start"] == pd.Timestamp("2023-01-31T18:01:00")
    assert jobs.loc["1", "nodes"] == 2 and jobs.loc["1", "time_limit_min"] == 120
    assert jobs.loc["2", "depends_on"] == "1"
    assert jobs.loc["4", "state"] == "FAILED"
    assert report["adjusted"]["runtime_clipped"] == 1  # job 4 ran 7300 s on a 7200 s limit
    explicit = read_trace(DATA / "sample.swf", cluster="w", procs_per_node=8)
    assert explicit.jobs.set_index("job_id").loc["1", "nodes"] == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "empty"),
        (b"\n  \n\n", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        (b"hello world\nthis is not a trace\n", "unknown trace format"),
        (b"JobID|Submit|Start\n1|2023-01-01T00:00:00|2023-01-01T00:00:00\n", "lacks the column"),
        (b"JobID JobName UID Start Submit End Priority TimelimitR ExitCode NNodes\n", "no data rows"),
    ],
)
def test_bad_files_get_one_clear_error(tmp_path, content, problem):
    path = tmp_path / "bad.log"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError) as err:
        clean_trace(path, cluster="x")
    message = str(err.value)
    assert problem in message
    assert str(path) in message and "Fix:" in message


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(TraceFormatError, match="file not found"):
        read_trace(tmp_path / "nope.log", cluster="x")
    with pytest.raises(TraceFormatError, match="directory"):
        read_trace(tmp_path, cluster="x")


def test_error_names_the_line(tmp_path):
    path = tmp_path / "bad.log"
    path.write_bytes(b"JobID Start\n1 2\n\x00junk")
    with pytest.raises(TraceFormatError) as err:
        read_trace(path, cluster="x")
    assert err.value.line == 3


def test_parquet_roundtrip(tmp_path):
    kept, _, _ = clean_trace(DATA / "tacc_tab.log", cluster="t")
    kept.to_parquet(tmp_path / "t.parquet")
    again, _, report = clean_trace(tmp_path / "t.parquet", cluster="t")
    pd.testing.assert_frame_equal(kept, again)
    assert report["format"] == "parquet"


def test_sacct_eligible_is_read_and_kept_within_submit_and_start(tmp_path):
    dump = tmp_path / "eligible.txt"
    dump.write_text(
        "JobID|Submit|Eligible|Start|End|TimelimitRaw|NNodes\n"
        # held for 2 h: eligible later than submit
        "1|2023-02-01T10:00:00|2023-02-01T12:00:00|2023-02-01T12:30:00|2023-02-01T13:00:00|60|1\n"
        # Slurm writes Unknown where it has no time: null, the row is kept
        "2|2023-02-01T10:00:00|Unknown|2023-02-01T10:00:00|2023-02-01T10:30:00|60|1\n"
        # recorded after its own start: clipped to the start, and counted
        "3|2023-02-01T10:00:00|2023-02-01T11:00:00|2023-02-01T10:10:00|2023-02-01T10:20:00|60|1\n"
    )
    kept, q, report = clean_trace(dump, cluster="e")
    _invariant(report)
    assert report["rows_kept"] == 3 and report["adjusted"]["eligible_clipped"] == 1
    e = kept.set_index("job_id")["eligible"]
    assert e["1"] == pd.Timestamp("2023-02-01T12:00:00")
    assert pd.isna(e["2"])
    assert e["3"] == pd.Timestamp("2023-02-01T10:10:00")
