"""Rolling-origin folds: one cluster's samples relabelled, never simulated again.

A sample replays the trace around its own start (a warm start at T, a 2-day warm-up, the
predecessor's 48 h life and the what-if of each decision point); which split it is labelled
with does not enter its simulation. So a fold is the cluster's sample set (training and
validation windows together) with its ``split`` column set again by sample start:

- *train*: the samples a training window [start, end] would hold, as ``sample_starts`` places
  them: from its start until ``horizon_days`` before the day after its end, so every training
  sample's replay ends before the validation window begins (no outcome the policies learn
  from looks into the month they are judged on);
- *validation*: every sample that starts inside the validation window;
- the other samples are left out.

Fold k of a rolling-origin evaluation validates on its own window and trains on every sample
from the cluster's training window start to the day before that window (``rolling_folds``).
"""

from __future__ import annotations

import pandas as pd

from mirage.errors import MirageError

#: days before a window's end (the day after its end date) that its last sample starts: the
#: warm-up, the predecessor's life and the successor's wait stay inside the window's data
HORIZON_DAYS = 5.0
DAY = pd.Timedelta(days=1)


def window_span(start, end, horizon_days: float = HORIZON_DAYS) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The sample starts [lo, hi) of a window [start, end] (dates, the end day counted whole)
    whose replay stays inside it: hi is ``horizon_days`` before the day after ``end``."""
    return pd.Timestamp(start), pd.Timestamp(end) + DAY - pd.Timedelta(days=horizon_days)


def fold_labels(starts: pd.Series, train: tuple, validation: tuple,
                horizon_days: float = HORIZON_DAYS) -> pd.Series:
    """Each sample's split in the fold (``train``, ``validation``, or None: left out), from its
    start time. Raises a MirageError when the windows overlap or one of them selects nothing."""
    t_lo, t_hi = window_span(*train, horizon_days)
    v_lo, v_hi = pd.Timestamp(validation[0]), pd.Timestamp(validation[1]) + DAY
    if v_hi <= v_lo or pd.Timestamp(train[1]) < pd.Timestamp(train[0]):
        raise MirageError(f"fold train {train[0]}..{train[1]}, validation {validation[0]}.."
                          f"{validation[1]}: a window ends before it starts; fix its dates")
    if pd.Timestamp(train[1]) + DAY > v_lo:
        raise MirageError(f"fold train window {train[0]}..{train[1]} overlaps its validation "
                          f"window {validation[0]}..{validation[1]}; fix: end the training "
                          "window the day before the validation window starts")
    starts = pd.to_datetime(starts)
    labels = pd.Series(None, index=starts.index, dtype=object)
    labels[(starts >= t_lo) & (starts < t_hi)] = "train"
    labels[(starts >= v_lo) & (starts < v_hi)] = "validation"
    for split, (lo, hi) in (("train", (t_lo, t_hi)), ("validation", (v_lo, v_hi))):
        if not (labels == split).any():
            raise MirageError(
                f"no sample starts in the fold's {split} span {lo}..{hi} (the samples start "
                f"{starts.min()}..{starts.max()}); fix the fold's windows (the config's "
                "`rolling` key) to lie inside the cluster's sample windows")
    return labels


def fold(data, train: tuple, validation: tuple, horizon_days: float = HORIZON_DAYS):
    """The fold of SampleSet ``data``: its samples of the two windows (``fold_labels``) with
    their ``split`` set to the window's, every point and history row with them."""
    labels = fold_labels(data.samples.set_index("sample_id")["sample_start"], train,
                         validation, horizon_days).dropna()
    out = data.subset(labels.index)
    out.samples = out.samples.assign(split=out.samples["sample_id"].map(labels))
    return out


def rolling_folds(windows: dict, validation_windows: list[dict], where: str) -> dict:
    """The folds of a cluster's ``rolling`` key: name (the validation start date) -> {"train":
    (start, end), "validation": (start, end)}, each training from the start of the cluster's
    training window (``windows``: the cluster's train and validation windows, whose samples the
    folds relabel) to the day before its validation window. ``where`` names the config key in
    errors."""
    folds, last_end = {}, None
    first = pd.Timestamp(windows["train"]["start"])
    end = windows["validation"]["end"]
    for w in validation_windows:
        lo, hi = pd.Timestamp(w["start"]), pd.Timestamp(w["end"])
        if hi < lo:
            raise MirageError(f"{where}: validation window {w['start']}..{w['end']} ends before "
                              "it starts; fix its dates")
        if hi > pd.Timestamp(end):
            raise MirageError(f"{where}: validation window {w['start']}..{w['end']} ends after "
                              f"the cluster's samples (validation window end {end}); fix: end "
                              "it by then, or extend the cluster's windows")
        if lo <= first:
            raise MirageError(f"{where}: validation window {w['start']}..{w['end']} starts at "
                              f"or before the training window's start {windows['train']['start']}, "
                              "leaving nothing to train on; fix: start it later")
        if last_end is not None and lo <= last_end:
            raise MirageError(f"{where}: validation windows overlap or are out of order at "
                              f"{w['start']}; fix: list them in time order, each starting after "
                              "the previous one ends")
        last_end = hi
        folds[str(lo.date())] = {"train": (str(first.date()), str((lo - DAY).date())),
                                 "validation": (str(lo.date()), str(hi.date()))}
    return folds


def _fold_cmd(args) -> None:
    import json
    from pathlib import Path

    from mirage.outcomes import SampleSet

    data = fold(SampleSet.load(args.samples), tuple(args.train), tuple(args.validation),
                args.horizon_days)
    data.save(args.out)
    counts = data.samples.groupby(["split", "chain_nodes"]).size()
    info = {"train": args.train, "validation": args.validation, "source": args.samples,
            "samples": [{"split": s, "chain_nodes": int(n), "samples": int(c)}
                        for (s, n), c in counts.items()]}
    Path(args.summary).write_text(json.dumps(info, indent=2) + "\n")
    print(counts.rename("samples").reset_index().to_string(index=False))


def register(ssub) -> None:
    """``mirage samples fold`` (added to the ``samples`` subcommands by mirage.cli)."""
    p = ssub.add_parser("fold", help="one rolling-origin fold of a SampleSet: its samples "
                        "relabelled train / validation by start, the others left out")
    p.add_argument("--samples", required=True, help="the cluster's SampleSet directory")
    p.add_argument("--train", nargs=2, required=True, metavar=("START", "END"),
                   help=f"training window (dates, END counted whole): the samples starting "
                        f"from START until {HORIZON_DAYS:g} days before the day after END")
    p.add_argument("--validation", nargs=2, required=True, metavar=("START", "END"),
                   help="validation window (dates, END counted whole): every sample starting "
                        "inside it")
    p.add_argument("--horizon-days", type=float, default=HORIZON_DAYS,
                   help="days before the training window's end its last sample starts")
    p.add_argument("--out", required=True, help="directory for the fold's SampleSet")
    p.add_argument("--summary", required=True,
                   help="JSON: the windows and the samples per split and chain size")
    p.set_defaults(func=_fold_cmd)
