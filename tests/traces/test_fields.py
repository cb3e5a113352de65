import pandas as pd
import pytest

from mirage.traces.fields import parse_ints, parse_limit_minutes, parse_times


@pytest.mark.parametrize(
    ("raw", "minutes"),
    [
        ("2880", 2880), ("2-00:00:00", 2880), ("1-12", 2160), ("1-12:30", 2190), ("0-00:00:30", 1),
        ("48:00:00", 2880), ("90:30", 91), ("UNLIMITED", None), ("Partition_Limit", None),
        ("", None), ("INFINITE", None),
    ],
)
def test_limit_formats(raw, minutes):
    values, bad = parse_limit_minutes(pd.Series([raw]))
    assert not bad.iloc[0]
    assert (pd.isna(values.iloc[0]) and minutes is None) or values.iloc[0] == minutes


@pytest.mark.parametrize("raw", ["2 days", "1-", "12:", "-5", "abc", "1:2:3:4"])
def test_bad_limits(raw):
    _, bad = parse_limit_minutes(pd.Series([raw]))
    assert bad.iloc[0]


def test_times_null_tokens_are_not_errors():
    values, bad = parse_times(pd.Series(["2023-03-09T12:48:05", "2023-03-09 12:48:05", "Unknown", "None", "", "2023-02-30T00:00:00", "soon"]))
    assert list(bad) == [False, False, False, False, False, True, True]
    assert values.iloc[0] == values.iloc[1] == pd.Timestamp("2023-03-09T12:48:05")
    assert values.iloc[2:].isna().all()


def test_ints():
    values, bad = parse_ints(pd.Series(["3", " 4 ", "", "2.5", "x", "1e30", "7.0"]))
    assert list(bad) == [False, False, False, True, True, True, False]
    assert values.iloc[0] == 3 and values.iloc[1] == 4 and values.iloc[6] == 7 and pd.isna(values.iloc[2])
