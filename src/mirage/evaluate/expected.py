"""Expected values with tolerances, for artifact evaluators.

``results/expected/<name>.csv`` holds, for one config, the headline figures of a reference run
(one row per cluster, mode, chain size, load level, policy and metric) with an absolute
tolerance each. ``mirage expected check`` compares a fresh ``evaluation.csv`` with it and says,
row by row, what is within tolerance; ``mirage expected write`` makes the file from a run.

Every step of the pipeline is seeded, so the same library versions on the same kind of machine
reproduce the reference exactly; the tolerances are for other machines, where floating-point
differences in xgboost or torch can move a few decisions by one 10-minute point.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mirage.errors import MirageError

KEYS = ["cluster", "mode", "chain_nodes", "load_level", "policy"]
# metric -> (absolute floor, relative part) of the tolerance
TOLERANCES = {
    "cost": (0.05, 0.15),
    "mean_interruption_h": (0.05, 0.15),
    "mean_overlap_h": (0.05, 0.15),
    "zero_interruption_share": (0.05, 0.0),
}
COLUMNS = KEYS + ["metric", "expected", "tolerance"]


def expected_from(table: pd.DataFrame, load_levels=("all",)) -> pd.DataFrame:
    """The expected-values table of an evaluation table (the rows of ``load_levels``)."""
    missing = [c for c in KEYS + list(TOLERANCES) if c not in table.columns]
    if missing:
        raise MirageError(f"evaluation table lacks column(s) {missing}. Fix: pass the "
                          "evaluation.csv that `mirage evaluate` wrote")
    rows = table[table["load_level"].isin(load_levels)]
    out = rows.melt(id_vars=KEYS, value_vars=list(TOLERANCES), var_name="metric",
                    value_name="expected")
    floor = out["metric"].map({m: t[0] for m, t in TOLERANCES.items()})
    rel = out["metric"].map({m: t[1] for m, t in TOLERANCES.items()})
    out["tolerance"] = np.maximum(floor, rel * out["expected"].abs()).round(4)
    out["expected"] = out["expected"].round(4)
    return out.sort_values(KEYS + ["metric"]).reset_index(drop=True)[COLUMNS]


def read_expected(path) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise MirageError(f"{path}: no such expected-values file. Fix: pass one of "
                          "results/expected/*.csv")
    exp = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in exp.columns]
    if missing:
        raise MirageError(f"{path}: missing column(s) {missing}. Fix: regenerate it with "
                          "`mirage expected write`")
    return exp


def check(table: pd.DataFrame, expected: pd.DataFrame) -> pd.DataFrame:
    """Every expected row with the measured value, the difference and ``ok``; a row the run
    does not have is measured as NaN and fails."""
    long = table.melt(id_vars=KEYS, value_vars=[m for m in TOLERANCES if m in table.columns],
                      var_name="metric", value_name="measured")
    exp = expected.astype({"chain_nodes": "int64"})
    long = long.astype({"chain_nodes": "int64"})
    out = exp.merge(long, on=KEYS + ["metric"], how="left")
    out["difference"] = (out["measured"] - out["expected"]).round(4)
    out["ok"] = out["difference"].abs() <= out["tolerance"] + 1e-9
    return out


def _check_cmd(args) -> None:
    from mirage.evaluate.metrics import to_markdown

    exp = read_expected(args.expected)
    tables = []
    for path in args.evaluation:
        if not Path(path).exists():
            raise MirageError(f"{path}: no such evaluation table. Fix: run the workflow's "
                              "`evaluation` target with the config the expected values belong to")
        tables.append(pd.read_csv(path))
    res = check(pd.concat(tables, ignore_index=True), exp)
    bad = res[~res["ok"]]
    shown = res if args.all else bad
    if len(shown):
        print(to_markdown(shown))
    print(f"{int(res['ok'].sum())} of {len(res)} expected values within tolerance "
          f"({args.expected})")
    if len(bad):
        raise MirageError(f"{len(bad)} value(s) outside tolerance (listed above); "
                          "see results/expected/README.md for what the tolerances cover")


def _write_cmd(args) -> None:
    table = pd.concat([pd.read_csv(p) for p in args.evaluation], ignore_index=True)
    out = expected_from(table, tuple(args.load_levels))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    print(f"{len(out)} expected values -> {args.out}")


def register(sub) -> None:
    p = sub.add_parser("expected", help="compare a run's evaluation with expected values")
    s = p.add_subparsers(dest="expected_command", required=True)
    c = s.add_parser("check", help="is every expected value within its tolerance?")
    c.add_argument("evaluation", nargs="+", help="evaluation.csv file(s) of the run")
    c.add_argument("--expected", required=True, help="results/expected/<name>.csv")
    c.add_argument("--all", action="store_true", help="list every row, not only the failures")
    c.set_defaults(func=_check_cmd)
    w = s.add_parser("write", help="make an expected-values file from a reference run")
    w.add_argument("evaluation", nargs="+")
    w.add_argument("--out", required=True)
    w.add_argument("--load-levels", nargs="+", default=["all"])
    w.set_defaults(func=_write_cmd)
