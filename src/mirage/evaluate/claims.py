"""The workflow's verdict on a run: the paper's headline claims next to this run's measured
values with their intervals, and the run's evaluation against its committed expected values.

(a) The paper's public text states two numbers, "interruption reduced by 17-100 %" and "23-76 %
of jobs with zero interruption, across load levels on the three clusters". They are judged per
cluster (a real trace and a synthetic stand-in apart), simulator mode and chain size, for two
readings of "Mirage": the paper's own learned method here (REINFORCE, ``pg``), and the best
learned policy of the setting, picked by its cost on the same validation samples (an optimistic
reading, said so in the table).

Each load level of a cluster is a cell; a cell with at least ``MIN_CELL_SAMPLES`` validation
samples decides, by the 95 % bootstrap interval over its samples (paired with reactive on the
same samples for the reduction):

- *reproduced*: the whole interval at or above the claim's lower end (17 %, 23 %) in every
  deciding cell (more is never a failure);
- *not reproduced*: some deciding cell's whole interval below it (the table names the worst);
- *within noise*: no cell below, but some interval spans the lower end;
- *too few samples*: no load level, and not all levels together, with that many samples;
- *not applicable*: the run cannot speak to it (the policy was not run; reactive never
  interrupted in any deciding cell, so there is nothing to reduce).

Where no single load level has the samples, all of the cluster's samples together decide.

(b) ``results/expected/<run>.csv`` within tolerance (``mirage.evaluate.expected``); the rule
fails with the table of the values that are off.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from mirage import options
from mirage.errors import MirageError
from mirage.evaluate.expected import check, read_evaluations, read_expected
from mirage.evaluate.metrics import (ALL, BASELINES, BLOCK_HOURS, EQUIVALENCE_H, LOAD_LEVELS,
                                     MIN_BOOTSTRAP_SAMPLES, NOT_LEARNED, block_length,
                                     paired_difference, resample_weights, resampled_means,
                                     to_markdown, verdict)

# the paper's numbers: (lower end, upper end, unit, text)
PAPER_CLAIMS = {
    "interruption_reduction": (17.0, 100.0, "%",
                               "interruption reduced by 17-100 % against reactive"),
    "zero_interruption": (0.23, 0.76, "share", "23-76 % of jobs with zero interruption"),
}
PAPER_METHOD = "pg"
# a cell (cluster, load level) decides a claim only with this many validation samples, the
# number below which a bootstrap interval is too narrow to trust (metrics.MIN_BOOTSTRAP_SAMPLES)
MIN_CELL_SAMPLES = MIN_BOOTSTRAP_SAMPLES
N_BOOT = 2000
REPRODUCED, NOT_REPRODUCED, WITHIN_NOISE = "reproduced", "not reproduced", "within noise"
TOO_FEW, NOT_APPLICABLE = "too few samples", "not applicable"
VERDICT_ORDER = (REPRODUCED, NOT_REPRODUCED, WITHIN_NOISE, TOO_FEW, NOT_APPLICABLE)
COLUMNS = ["claim", "cluster", "trace", "mode", "chain_nodes", "reading", "policy", "cells",
           "measured", "measured_min", "measured_max", "paper", "verdict", "why"]
LEARNING_COLUMNS = ["cluster", "trace", "mode", "chain_nodes", "n", "comparison", "policy",
                    "against", "cost_diff_h", "low", "high", "verdict"]


def _fmt(v: float, unit: str) -> str:
    """A reduction in % or a share, both written as a percentage."""
    return f"{v if unit == '%' else 100 * v:.0f} %"


def per_sample(out: pd.DataFrame, policy: str) -> pd.DataFrame:
    """``policy``'s interruption and zero-interruption indicator per sample (a mean over its
    training seeds), with reactive's interruption and the load level, in sample order."""
    mine = out[out["policy"] == policy]
    return (mine.assign(interrupted=np.maximum(mine["x_h"], 0.0), zero=mine["x_h"] <= 0,
                        reactive=np.maximum(mine["reactive_x_h"], 0.0))
            .groupby("sample_id", sort=True)
            .agg(interrupted=("interrupted", "mean"), zero=("zero", "mean"),
                 reactive=("reactive", "first"), load_level=("load_level", "first")))


def _statistic(claim: str, s: pd.DataFrame, weights: np.ndarray | None = None) -> np.ndarray:
    """The claim's value on the samples ``s`` (and on each bootstrap resample of ``weights``,
    metrics.resample_weights)."""
    if weights is None:
        weights = np.ones((1, len(s)))
    if claim == "zero_interruption":
        return resampled_means(s["zero"].to_numpy(dtype=float), weights)
    m = resampled_means(s["interrupted"].to_numpy(dtype=float), weights)
    r = resampled_means(s["reactive"].to_numpy(dtype=float), weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r > 0, 100.0 * (r - m) / r, np.nan)


def cell_interval(s: pd.DataFrame, claim: str, seed, block: int = 1) -> dict:
    """The claim's value on the samples ``s`` of one cell with its 95 % bootstrap percentile
    interval over samples (paired: a resample keeps each sample's policy and reactive outcome
    together; ``block`` > 1: whole blocks of that many successive sample starts,
    metrics.resample_weights; ``s`` is indexed by sample_id, as per_sample gives it)."""
    value = float(_statistic(claim, s)[0])
    if np.isnan(value):
        return {"value": value, "low": np.nan, "high": np.nan, "n": len(s)}
    weights = resample_weights(s.index.to_numpy(), N_BOOT, np.random.default_rng(seed), block)
    boot = _statistic(claim, s, weights)
    low, high = np.nanpercentile(boot, [2.5, 97.5])
    return {"value": value, "low": float(low), "high": float(high), "n": len(s)}


def cell_verdict(iv: dict, low_end: float) -> str:
    """A claim's verdict from its interval ``iv`` against the claim's lower end."""
    if iv["low"] >= low_end - 1e-9:
        return REPRODUCED
    if iv["high"] < low_end - 1e-9:
        return NOT_REPRODUCED
    return WITHIN_NOISE


def _cell_text(level: str, iv: dict, unit: str) -> str:
    return (f"{level} {_fmt(iv['value'], unit)} [{_fmt(iv['low'], unit)}, "
            f"{_fmt(iv['high'], unit)}] n={iv['n']}")


def _claim_row(setting: pd.DataFrame, claim: str, policy: str | None, seed,
               block: int = 1) -> dict:
    low_end, high_end, unit, _ = PAPER_CLAIMS[claim]
    row = {"paper": f"{_fmt(low_end, unit)} - {_fmt(high_end, unit)}", "policy": policy or "-",
           "cells": "-", "measured": "-", "measured_min": np.nan, "measured_max": np.nan}
    if policy is None:
        return row | {"verdict": NOT_APPLICABLE, "why": "no learned policy in this run"}
    if policy not in set(setting["policy"]):
        return row | {"verdict": NOT_APPLICABLE, "why": f"{policy} was not run in this setting"}
    samples = per_sample(setting, policy)
    counts = samples["load_level"].value_counts()
    levels = [lvl for lvl in LOAD_LEVELS if counts.get(lvl, 0) >= MIN_CELL_SAMPLES]
    cells = {lvl: samples[samples["load_level"] == lvl] for lvl in levels}
    pooled = not cells
    if pooled:
        if len(samples) < MIN_CELL_SAMPLES:
            return row | {"verdict": TOO_FEW,
                          "why": f"{len(samples)} validation samples in all, fewer than "
                                 f"{MIN_CELL_SAMPLES}"}
        cells = {ALL: samples}
    ivs = {}
    for lvl, s in cells.items():
        key = "/".join(map(str, (seed, claim, policy, lvl, *setting.iloc[0][
            ["cluster", "mode", "chain_nodes"]])))
        ivs[lvl] = cell_interval(s, claim, [seed, zlib.crc32(key.encode())], block)
    ivs = {lvl: iv for lvl, iv in ivs.items() if not np.isnan(iv["value"])}
    if not ivs:
        return row | {"verdict": NOT_APPLICABLE,
                      "why": "reactive never interrupted here: nothing to reduce"}
    values = np.array([iv["value"] for iv in ivs.values()])
    verdicts = {lvl: cell_verdict(iv, low_end) for lvl, iv in ivs.items()}
    row |= {"cells": ", ".join(f"{lvl} ({iv['n']})" for lvl, iv in ivs.items()),
            "measured": "; ".join(_cell_text(lvl, iv, unit) for lvl, iv in ivs.items()),
            "measured_min": float(values.min()), "measured_max": float(values.max())}
    scope = (f"all {len(samples)} samples together (no load level has {MIN_CELL_SAMPLES})"
             if pooled else f"{len(ivs)} load level(s) with >= {MIN_CELL_SAMPLES} samples")
    below = [lvl for lvl, v in verdicts.items() if v == NOT_REPRODUCED]
    if below:
        worst = min(below, key=lambda lvl: ivs[lvl]["high"])
        return row | {"verdict": NOT_REPRODUCED,
                      "why": f"below {_fmt(low_end, unit)} with 95 % confidence at "
                             f"{', '.join(below)} load ({scope}); worst "
                             f"{_cell_text(worst, ivs[worst], unit)}"}
    if all(v == REPRODUCED for v in verdicts.values()):
        return row | {"verdict": REPRODUCED,
                      "why": f"at least {_fmt(low_end, unit)} with 95 % confidence on {scope}"}
    open_ = [lvl for lvl, v in verdicts.items() if v == WITHIN_NOISE]
    return row | {"verdict": WITHIN_NOISE,
                  "why": f"the interval spans {_fmt(low_end, unit)} at {', '.join(open_)} "
                         f"load ({scope})"}


def best_learned(setting: pd.DataFrame) -> str | None:
    """The cheapest learned policy on these samples (mean cost; optimistic by construction)."""
    learned = setting[~setting["policy"].isin(NOT_LEARNED)]
    if learned.empty:
        return None
    return str(learned.groupby("policy", sort=True)["cost"].mean().idxmin())


def _settings(out: pd.DataFrame):
    yield from out.groupby(["cluster", "mode", "chain_nodes"], sort=True)


def paper_claims(out: pd.DataFrame, traces: dict[str, str] | None = None,
                 seed: int = 0, block: int = 1) -> pd.DataFrame:
    """The paper's headline claims per cluster, simulator mode and chain size, from the
    per-sample outcomes (outcomes.parquet) of one or more clusters (``traces``: cluster ->
    what its trace is, e.g. "real" or "synthetic stand-in", for the table); ``block``: the
    bootstrap's blocks of successive samples (metrics.resample_weights)."""
    traces = traces or {}
    rows = []
    for (cluster, mode, nodes), setting in _settings(out):
        policies = set(setting["policy"])
        readings = [("paper's method (REINFORCE)",
                     PAPER_METHOD if PAPER_METHOD in policies else None),
                    ("best learned, picked on these samples (optimistic)", best_learned(setting))]
        for claim, (*_, text) in PAPER_CLAIMS.items():
            for reading, policy in readings:
                rows.append({"claim": text, "cluster": cluster,
                             "trace": traces.get(cluster, "?"), "mode": mode,
                             "chain_nodes": int(nodes), "reading": reading,
                             **_claim_row(setting, claim, policy, seed, block)})
    return pd.DataFrame(rows, columns=COLUMNS)


def learning_pays(out: pd.DataFrame, traces: dict[str, str] | None = None,
                  seed: int = 0, margin_h: float = EQUIVALENCE_H,
                  block: int = 1) -> pd.DataFrame:
    """Per cluster, mode and chain size, on all validation samples: the best learned policy's
    mean cost minus the best baseline's, and REINFORCE's minus reactive's, each with its 95 %
    paired bootstrap interval (simultaneous over the candidates for the picked pair, as the
    report's goal checks; metrics.paired_difference) and its verdict (metrics.verdict, with
    the equivalence margin ``margin_h``); ``block`` as paper_claims'."""
    traces = traces or {}
    rows = []
    for (cluster, mode, nodes), setting in _settings(out):
        costs = setting.groupby("policy")["cost"].mean()
        policies = sorted(costs.index)
        learned = [p for p in policies if p not in NOT_LEARNED]
        baselines = [p for p in policies if p in BASELINES]
        pairs = [("best learned vs best baseline", learned, baselines)]
        if PAPER_METHOD in policies and "reactive" in policies:
            pairs.append(("REINFORCE vs reactive", [PAPER_METHOD], ["reactive"]))
        for comparison, a, b in pairs:
            if not a or not b:
                continue
            d = paired_difference(setting, a, b, seed=[seed, zlib.crc32(
                f"{cluster}/{mode}/{nodes}/{comparison}".encode())], block=block)
            rows.append({"cluster": cluster, "trace": traces.get(cluster, "?"), "mode": mode,
                         "chain_nodes": int(nodes), "n": d["n"], "comparison": comparison,
                         "policy": min(a, key=costs.get), "against": min(b, key=costs.get),
                         "cost_diff_h": d["diff"], "low": d["low"], "high": d["high"],
                         "verdict": verdict(d, margin_h=margin_h)})
    return pd.DataFrame(rows, columns=LEARNING_COLUMNS)


def claims_markdown(claims: pd.DataFrame, expected: pd.DataFrame | None, run: str,
                    expected_path: str | None, learning: pd.DataFrame | None = None) -> str:
    lines = [f"# Claims of run `{run}`", "",
             "## The paper's headline claims", "",
             "Judged per cluster, simulator mode and chain size. Every load level with at least "
             f"{MIN_CELL_SAMPLES} validation samples decides by its 95 % bootstrap interval "
             "(paired with reactive on the same samples for the reduction): *reproduced* when "
             "every such interval lies at or above the claim's lower end, *not reproduced* when "
             "one lies wholly below it, *within noise* otherwise; where no level has the samples, "
             "all of the cluster's samples together decide. Load levels by the reactive "
             "interruption X of the same sample: low X <= 2 h, medium <= 12 h, heavy > 12 h. "
             "`measured`: each deciding level's value [95 % interval] and sample count.", ""]
    counts = claims["verdict"].value_counts()
    lines += ["Verdicts: " + ", ".join(f"{v} {counts.get(v, 0)}" for v in VERDICT_ORDER), ""]
    shown = claims.drop(columns=["measured_min", "measured_max"])
    lines += [to_markdown(shown), ""]
    if learning is not None and len(learning):
        lines += ["## Does learning pay?", "",
                  "Mean cost (interruption + 0.5 x overlap, hours per handover) of the best "
                  "learned policy minus the best baseline's, and REINFORCE's minus reactive's, "
                  "on all validation samples of a setting, with the 95 % paired bootstrap "
                  "interval (simultaneous over the candidates, so picking the best of each on "
                  "these samples is accounted for). Negative: the first is cheaper. "
                  "*equivalent*: the interval holds 0 and lies within the equivalence margin "
                  "(`evaluation.equivalence_h`), so no difference worth acting on.", "",
                  to_markdown(learning), ""]
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
    traces = json.loads(args.traces)
    out = pd.concat([pd.read_parquet(p) for p in args.outcomes], ignore_index=True)
    block = block_length(args.block_hours, args.every_hours)
    claims = paper_claims(out, traces, args.seed, block)
    learning = learning_pays(out, traces, args.seed, args.equivalence_h, block)
    exp_res, exp_path = None, None
    if args.expected and Path(args.expected).exists():
        exp_path = args.expected
        exp_res = check(table, read_expected(args.expected))
    elif args.expected and args.require_expected:
        raise MirageError(f"{args.expected}: no expected values for this run. Fix: write them "
                          "with `mirage expected regenerate CONFIG`, or drop --require-expected")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    claims.to_csv(args.table, index=False)
    learning.to_csv(args.learning, index=False)
    text = claims_markdown(claims, exp_res, args.run, exp_path, learning)
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
    p.add_argument("--outcomes", nargs="+", required=True,
                   help="outcomes.parquet of every cluster of the run (per-sample outcomes)")
    p.add_argument("--traces", default="{}",
                   help='JSON: cluster -> what its trace is ("real", "synthetic stand-in")')
    options.add_seed(p, "seeds the bootstrap intervals")
    options.add_equivalence(p, EQUIVALENCE_H)
    options.add_blocks(p, BLOCK_HOURS)
    p.add_argument("--expected", help="results/expected/<run>.csv; absent file -> not checked")
    p.add_argument("--require-expected", action="store_true",
                   help="fail when the expected-values file does not exist")
    p.add_argument("--out", required=True, help="claims.md")
    p.add_argument("--table", required=True, help="claims.csv")
    p.add_argument("--learning", required=True,
                   help="learning.csv: best learned vs best baseline, REINFORCE vs reactive")
    p.set_defaults(func=_claims_cmd)
