"""Rolling-origin folds: one sample set relabelled by start (mirage.samples.folds)."""

import numpy as np
import pandas as pd
import pytest

from mirage.cli import main
from mirage.errors import MirageError
from mirage.outcomes import SampleSet
from mirage.samples.folds import fold, rolling_folds

WINDOWS = {"train": {"start": "2022-11-01", "end": "2023-02-28"},
           "validation": {"start": "2023-03-01", "end": "2023-03-31"}}


def _samples(start="2022-11-01", days=150, every_hours=24, history=True) -> SampleSet:
    """A SampleSet of one sample every ``every_hours`` from ``start`` (two points each; a
    history of 144 + 1 rows whose values are the sample id)."""
    starts = pd.date_range(start, periods=int(days * 24 / every_hours),
                           freq=pd.Timedelta(hours=every_hours))
    n = len(starts)
    ends = starts + pd.Timedelta(days=4)
    samples = pd.DataFrame({
        "sample_id": np.arange(n), "cluster": "ls6",
        "split": np.where(starts < pd.Timestamp("2023-03-01"), "train", "validation"),
        "chain_nodes": 1, "sample_start": starts, "pred_submit": starts + pd.Timedelta(days=2),
        "pred_start": starts + pd.Timedelta(days=2), "pred_end": ends, "n_points": 2,
        "reactive_x_h": 1.0})
    points = pd.DataFrame({
        "sample_id": np.repeat(np.arange(n), 2), "k": np.tile([0, 1], n),
        "t": np.repeat(ends, 2) - pd.to_timedelta(np.tile([10, 0], n), unit="min"),
        "x_h": 0.5, "pred_running": 1, "pred_elapsed_h": 1.0, "pred_wait_h": 0.0,
        "pred_remaining_h": 1.0})
    if not history:
        return SampleSet(samples, points)
    hist = np.repeat(np.arange(n, dtype=np.float32), 145)[:, None] * np.ones((1, 42), np.float32)
    offsets = np.arange(n + 1, dtype=np.int64) * 145
    return SampleSet(samples, points, hist, offsets, np.arange(n))


def test_a_fold_relabels_by_start_and_drops_the_samples_outside_both_windows():
    data = _samples()
    out = fold(data, ("2022-11-01", "2022-11-30"), ("2022-12-01", "2022-12-31"))
    s = out.samples.set_index("sample_id")
    train = s.loc[s["split"] == "train", "sample_start"]
    val = s.loc[s["split"] == "validation", "sample_start"]
    # training: from Nov 1 until 5 days before Dec 1 (the replay ends before December);
    # validation: every sample starting in December
    assert train.min() == pd.Timestamp("2022-11-01") and train.max() == pd.Timestamp("2022-11-25")
    assert len(train) == 25 and len(val) == 31
    assert val.min() == pd.Timestamp("2022-12-01") and val.max() == pd.Timestamp("2022-12-31")
    # nothing duplicated, every point and history row of a kept sample kept with it
    assert out.samples["sample_id"].is_unique
    assert len(out.points) == 2 * len(out.samples)
    assert set(out.points["sample_id"]) == set(out.samples["sample_id"])
    for sid in out.samples["sample_id"]:
        np.testing.assert_array_equal(out.history_for(sid), data.history_for(sid))
    out.validate()
    # the source is left alone
    assert (data.samples["split"] == "train").sum() == 120


def test_a_fold_without_history_round_trips_and_the_command_writes_its_summary(tmp_path):
    _samples(history=False).save(tmp_path / "all")
    code = main(["samples", "fold", "--samples", str(tmp_path / "all"),
                 "--train", "2022-11-01", "2023-01-31", "--validation", "2023-02-01",
                 "2023-02-28", "--out", str(tmp_path / "fold"),
                 "--summary", str(tmp_path / "fold" / "summary.json")])
    assert code in (0, None)
    back = SampleSet.load(tmp_path / "fold")
    assert back.history is None
    assert back.samples["split"].value_counts().to_dict() == {"train": 87, "validation": 28}
    assert "validation" in (tmp_path / "fold" / "summary.json").read_text()


@pytest.mark.parametrize(("train", "validation", "message"), [
    (("2022-11-01", "2022-12-05"), ("2022-12-01", "2022-12-31"), "overlaps"),
    (("2022-11-01", "2022-11-03"), ("2022-12-01", "2022-12-31"), "no sample starts in the fold's train"),
    (("2022-11-01", "2023-05-31"), ("2023-06-01", "2023-06-30"), "no sample starts in the fold's validation"),
])
def test_overlapping_or_empty_windows_are_refused_naming_the_fix(train, validation, message):
    with pytest.raises(MirageError, match=message) as err:
        fold(_samples(), train, validation)
    assert "fix" in str(err.value)


def test_rolling_folds_train_on_everything_before_each_validation_window():
    months = [{"start": "2022-12-01", "end": "2022-12-31"},
              {"start": "2023-01-01", "end": "2023-01-31"}]
    folds = rolling_folds(WINDOWS, months, "clusters.ls6.rolling.validation")
    assert folds == {
        "2022-12-01": {"train": ("2022-11-01", "2022-11-30"),
                       "validation": ("2022-12-01", "2022-12-31")},
        "2023-01-01": {"train": ("2022-11-01", "2022-12-31"),
                       "validation": ("2023-01-01", "2023-01-31")}}


@pytest.mark.parametrize(("windows", "message"), [
    ([{"start": "2023-01-01", "end": "2023-01-31"}, {"start": "2023-01-15", "end": "2023-02-10"}],
     "overlap or are out of order"),
    ([{"start": "2022-11-01", "end": "2022-11-30"}], "leaving nothing to train on"),
    ([{"start": "2023-03-01", "end": "2023-04-30"}], "ends after the cluster's samples"),
    ([{"start": "2023-01-31", "end": "2023-01-01"}], "ends before it starts"),
])
def test_bad_rolling_windows_name_the_key_and_the_fix(windows, message):
    with pytest.raises(MirageError, match=message) as err:
        rolling_folds(WINDOWS, windows, "clusters.ls6.rolling.validation")
    assert "clusters.ls6.rolling.validation" in str(err.value) and "fix" in str(err.value)
