"""The workflow's verdict on a run: the paper's headline claims next to this run's measured
values, and the run's evaluation against its committed expected values.

(a) The paper's public text states two numbers, "interruption reduced by 17-100 %" and "23-76 %
of jobs with zero interruption, across load levels on the three clusters". For each simulator
mode and chain size they are checked for two readings of "Mirage": the paper's own learned
method here (REINFORCE, ``pg``), and the best learned policy of the setting, picked by its cost
on the same validation samples (an optimistic reading, said so in the table). A claim is

- *reproduced* when its lower end holds in every (cluster, load level) cell with at least
  ``MIN_CELL_SAMPLES`` validation samples:
  every reduction >= 17 %, every zero-interruption share >= 23 % (more is never a failure);
- *not reproduced* when some cell falls below it (the table says how many and the worst);
- *not applicable* when the run cannot speak to it (the policy was not run, no cell with
  samples, reactive never interrupted so there is nothing to reduce).

On synthetic traces the verdict is about the calibrated stand-ins, not the clusters themselves;
the table says which trace each row measured.

(b) ``results/expected/<run>.csv`` within tolerance (``mirage.evaluate.expected``); the rule
fails with the table of the values that are off.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from mirage.errors import MirageError
from mirage.evaluate.expected import check, read_evaluations, read_expected
from mirage.evaluate.metrics import LOAD_LEVELS, NOT_LEARNED, to_markdown

# the paper's numbers: (metric, lower end, upper end, unit, text)
PAPER_CLAIMS = {
    "interruption_reduction": ("interruption_reduction_pct", 17.0, 100.0, "%",
                               "interruption reduced by 17-100 % against reactive"),
    "zero_interruption": ("zero_interruption_share", 0.23, 0.76, "share",
                          "23-76 % of jobs with zero interruption"),
}
PAPER_METHOD = "pg"
# a cell (cluster, load level) speaks to a claim only with this many validation samples: with
# fewer, one sample decides the share and the reduction
MIN_CELL_SAMPLES = 5
REPRODUCED, NOT_REPRODUCED, NOT_APPLICABLE = "reproduced", "not reproduced", "not applicable"
COLUMNS = ["claim", "mode", "chain_nodes", "reading", "policy", "traces", "cells", "measured_min",
           "measured_max", "paper", "verdict", "why"]


def _fmt(v: float, unit: str) -> str:
    return f"{v:.0f} %" if unit == "%" else f"{v:.0%}"


def _best_learned(table: pd.DataFrame) -> str | None:
    overall = table[(table["load_level"] == "all") & ~table["policy"].isin(NOT_LEARNED)]
    if overall.empty:
        return None
    by_policy = overall.groupby("policy", sort=True)["cost"].mean()
    return str(by_policy.idxmin())


def _claim_row(cells: pd.DataFrame, claim: str, policy: str | None) -> dict:
    metric, low, high, unit, _ = PAPER_CLAIMS[claim]
    paper = f"{_fmt(low, unit)} - {_fmt(high, unit)}"
    row = {"paper": paper, "policy": policy or "-", "cells": 0, "measured_min": np.nan,
           "measured_max": np.nan}
    if policy is None:
        return row | {"verdict": NOT_APPLICABLE, "why": "no learned policy in this run"}
    mine = cells[cells["policy"] == policy]
    if mine.empty:
        return row | {"verdict": NOT_APPLICABLE, "why": f"{policy} was not run in this setting"}
    mine = mine[mine["n"] >= MIN_CELL_SAMPLES]
    if mine.empty:
        return row | {"verdict": NOT_APPLICABLE,
                      "why": f"no (cluster, load level) cell with >= {MIN_CELL_SAMPLES} "
                             "validation samples"}
    if claim == "interruption_reduction":
        mine = mine[mine[metric].notna()]
        if mine.empty:
            return row | {"verdict": NOT_APPLICABLE,
                          "why": "reactive never interrupted here: nothing to reduce"}
    values = mine[metric].to_numpy(dtype=float)
    row |= {"cells": len(values), "measured_min": float(values.min()),
            "measured_max": float(values.max())}
    below = mine[mine[metric] < low - 1e-9]
    if below.empty:
        return row | {"verdict": REPRODUCED,
                      "why": f"at least {_fmt(low, unit)} in all {len(values)} cells"}
    worst = below.loc[below[metric].idxmin()]
    return row | {"verdict": NOT_REPRODUCED,
                  "why": f"below {_fmt(low, unit)} in {len(below)} of {len(values)} cells; "
                         f"worst {worst['cluster']} {worst['load_level']} load "
                         f"({_fmt(float(worst[metric]), unit)}, n={int(worst['n'])})"}


def paper_claims(table: pd.DataFrame, traces: dict[str, str] | None = None) -> pd.DataFrame:
    """The paper's headline claims per simulator mode and chain size, from evaluation tables of
    one or more clusters (``traces``: cluster -> "synthetic"/"real", for the table)."""
    traces = traces or {}
    cells = table[table["load_level"].isin(LOAD_LEVELS)]
    rows = []
    for (mode, nodes), setting in table.groupby(["mode", "chain_nodes"], sort=True):
        setting_cells = cells[(cells["mode"] == mode) & (cells["chain_nodes"] == nodes)]
        clusters = sorted(setting["cluster"].unique())
        kinds = sorted({traces.get(c, "?") for c in clusters})
        trace_text = f"{', '.join(clusters)} ({'/'.join(kinds)})"
        best = _best_learned(setting)
        readings = [("paper's method (REINFORCE)", PAPER_METHOD if PAPER_METHOD in
                     set(setting["policy"]) else None),
                    ("best learned, picked on these samples (optimistic)", best)]
        for claim in PAPER_CLAIMS:
            for reading, policy in readings:
                rows.append({"claim": PAPER_CLAIMS[claim][4], "mode": mode,
                             "chain_nodes": int(nodes), "reading": reading, "traces": trace_text,
                             **_claim_row(setting_cells, claim, policy)})
    return pd.DataFrame(rows, columns=COLUMNS)


def claims_markdown(claims: pd.DataFrame, expected: pd.DataFrame | None, run: str,
                    expected_path: str | None) -> str:
    lines = [f"# Claims of run `{run}`", "",
             "## The paper's headline claims", "",
             "Each claim's lower end must hold in every (cluster, load level) cell with at least "
             f"{MIN_CELL_SAMPLES} validation samples; "
             "more is never a failure. Load levels by the reactive interruption X of the same "
             "sample: low X <= 2 h, medium <= 12 h, heavy > 12 h.", ""]
    counts = claims["verdict"].value_counts()
    lines += ["Verdicts: " + ", ".join(f"{v} {counts.get(v, 0)}" for v in
                                       (REPRODUCED, NOT_REPRODUCED, NOT_APPLICABLE)), ""]
    shown = claims.copy()
    for col in ("measured_min", "measured_max"):
        shown[col] = [("-" if np.isnan(v) else (f"{v:.1f} %" if "reduced" in c else f"{v:.0%}"))
                      for v, c in zip(shown[col], shown["claim"])]
    lines += [to_markdown(shown), ""]
    lines += ["## Expected values", ""]
    if expected is None:
        lines += [f"No reference values for run `{run}` (results/expected/{run}.csv): nothing "
                  "to compare. Write them with `mirage expected regenerate CONFIG`.", ""]
    else:
        bad = expected[~expected["ok"]]
        lines += [f"{int(expected['ok'].sum())} of {len(expected)} values within tolerance of "
                  f"`{expected_path}`.", ""]
        ranges = expected[expected["check"] == "range"]
        if len(ranges):
            lines += [f"{len(ranges)} of them are means over training seeds whose reference "
                      "spread is too wide for a point check: each is checked against the "
                      "reference seeds' range (`low`..`high`), "
                      f"{int(ranges['ok'].sum())} inside it.", ""]
        if len(bad):
            lines += ["Outside tolerance:", "", to_markdown(bad), ""]
    return "\n".join(lines) + "\n"


def _claims_cmd(args) -> None:
    table = read_evaluations(args.evaluation)
    claims = paper_claims(table, json.loads(args.traces))
    exp_res, exp_path = None, None
    if args.expected and Path(args.expected).exists():
        exp_path = args.expected
        exp_res = check(table, read_expected(args.expected))
    elif args.expected and args.require_expected:
        raise MirageError(f"{args.expected}: no expected values for this run. Fix: write them "
                          "with `mirage expected regenerate CONFIG`, or drop --require-expected")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    claims.to_csv(args.table, index=False)
    text = claims_markdown(claims, exp_res, args.run, exp_path)
    Path(args.out).write_text(text)
    print(text)
    if exp_res is not None and not exp_res["ok"].all():
        n = int((~exp_res["ok"]).sum())
        raise MirageError(f"{n} of {len(exp_res)} value(s) of run {args.run} outside the "
                          f"tolerance of {exp_path} (table above). Fix: find what changed "
                          "(code, library versions, machine); if the change is intended, "
                          "regenerate the reference with `mirage expected regenerate CONFIG`")


def register(sub) -> None:
    p = sub.add_parser("claims", help="the paper's claims and the expected values, checked")
    p.add_argument("evaluation", nargs="+", help="evaluation.csv of every cluster of the run")
    p.add_argument("--run", required=True, help="the run's name (results/<run>/)")
    p.add_argument("--traces", default="{}", help='JSON: cluster -> "synthetic" or "real"')
    p.add_argument("--expected", help="results/expected/<run>.csv; absent file -> not checked")
    p.add_argument("--require-expected", action="store_true",
                   help="fail when the expected-values file does not exist")
    p.add_argument("--out", required=True, help="claims.md")
    p.add_argument("--table", required=True, help="claims.csv")
    p.set_defaults(func=_claims_cmd)
