import pandas as pd
import pytest

from mirage.errors import MirageError
from mirage.traces.clean import clean_trace
from mirage.traces.split import check_coverage, split_window
from mirage.traces.schema import conform


def _jobs():
    t = pd.Timestamp
    rows = [  # (job, submit, start, end)
        ("old", t("2023-01-01 00:00"), t("2023-01-01 01:00"), t("2023-01-02 00:00")),  # ended before history
        ("ctx", t("2023-01-08 00:00"), t("2023-01-08 01:00"), t("2023-01-09 00:00")),  # inside history
        ("run", t("2023-01-05 00:00"), t("2023-01-05 01:00"), t("2023-01-12 00:00")),  # running across start
        ("in1", t("2023-01-10 00:00"), t("2023-01-10 01:00"), t("2023-01-10 02:00")),
        ("in2", t("2023-01-20 23:59"), t("2023-01-21 01:00"), t("2023-01-21 02:00")),  # last minute of end date
        ("tail", t("2023-01-23 00:00"), t("2023-01-23 01:00"), t("2023-01-23 02:00")),  # within horizon
        ("far", t("2023-02-10 00:00"), t("2023-02-10 01:00"), t("2023-02-10 02:00")),
    ]
    df = pd.DataFrame(rows, columns=["job_id", "submit", "start", "end"])
    df["cluster"], df["time_limit_min"], df["nodes"], df["line"] = "c", 2880, 1, range(1, len(df) + 1)
    return conform(df)


def test_window_keeps_context():
    out = split_window(_jobs(), "2023-01-10", "2023-01-20", history_hours=48, horizon_hours=72)
    assert list(out["job_id"]) == ["ctx", "run", "in1", "in2", "tail"]
    assert list(out["in_window"]) == [False, False, True, True, False]


def test_bad_windows():
    with pytest.raises(MirageError, match="before its start"):
        split_window(_jobs(), "2023-01-20", "2023-01-10", history_hours=0, horizon_hours=0)
    with pytest.raises(MirageError, match="outside the trace"):
        check_coverage(_jobs(), "2024-01-01", "2024-02-01", "validation")


def test_real_ls6_paper_windows(ls6_path):
    kept, _, _ = clean_trace(ls6_path, cluster="ls6")
    train = split_window(kept, "2022-11-01", "2023-02-28", history_hours=72, horizon_hours=120)
    val = split_window(kept, "2023-03-01", "2023-03-31", history_hours=72, horizon_hours=120)
    # every job submitted in a window is in exactly one window
    assert train["in_window"].sum() + val["in_window"].sum() == (kept["submit"] >= "2022-11-01").sum()
    # validation starts with the jobs running and queued at 2023-03-01 00:00 as context
    t0 = pd.Timestamp("2023-03-01")
    live = kept[(kept["submit"] < t0) & (kept["end"] > t0)]
    assert set(live["job_id"]) <= set(val["job_id"])
