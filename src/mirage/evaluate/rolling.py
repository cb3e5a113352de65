"""Rolling-origin evaluation: the folds' per-sample outcomes pooled into one table of verdicts.

Each fold validates on its own window and trains on every sample before it
(mirage.samples.folds), so every validation sample is judged by policies that never saw its
period; pooled, the folds give one validation set of every month. Per cluster, simulator mode,
chain size and load level (low / medium / heavy by reactive's interruption, and all), with the
sample count:

- *best learned vs best baseline*: the cheapest learned policy's mean cost minus the cheapest
  baseline's;
- per reinforcement-learning method (the catalogue's seeded torch policies in the run): its
  cost minus reactive's, and minus the cheapest learned policy that is not reinforcement
  learning;
- per method, the paper's two claims (mirage.evaluate.claims): the interruption reduction
  against reactive and the share of jobs without interruption, against the claim's lower end.

A policy with several training seeds counts as its mean over seeds on each sample.
``pooled_evaluation`` gives the pooled folds' evaluation.csv and seeds.csv (every policy's
metrics over all validation samples), the tables ``mirage expected`` checks. The cost
comparisons take the paired bootstrap interval of metrics.paired_difference (simultaneous over
the candidates where the best of several is picked on these samples, as the report's), the
claims the paired percentile interval of claims.cell_interval; both 95 %. A cell with fewer
than MIN_BOOTSTRAP_SAMPLES samples gets no verdict ("too few samples"); a cost comparison
whose interval holds zero is "equivalent" where it lies within the equivalence margin
(metrics.verdict), and "within noise" otherwise, with the samples it would take to decide.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from mirage import options
from mirage.errors import MirageError
from mirage.evaluate.claims import (NOT_APPLICABLE, PAPER_CLAIMS, TOO_FEW, cell_verdict,
                                    per_sample, cell_interval)
from mirage.evaluate.metrics import (ALL, BASELINES, BLOCK_HOURS, EQUIVALENCE_H, LOAD_LEVELS,
                                     MIN_BOOTSTRAP_SAMPLES, NOT_LEARNED, block_length,
                                     evaluation_tables, paired_difference, samples_to_decide,
                                     to_markdown, verdict)
from mirage.policies.catalogue import CATALOGUE

COLUMNS = ["cluster", "mode", "chain_nodes", "load_level", "n", "folds", "comparison",
           "policy", "against", "value", "low", "high", "unit", "verdict", "n_to_decide"]
BEST = "best learned vs best baseline"
#: the short name of each paper claim in the table's ``comparison`` column
CLAIM_NAMES = {"interruption_reduction": "interruption reduction",
               "zero_interruption": "zero-interruption share"}
KEYS = ["cluster", "mode", "chain_nodes", "policy", "seed", "sample_id"]


def rl_methods(policies) -> list[str]:
    """The reinforcement-learning policies among ``policies``: the catalogue's seeded torch
    policies (dqn, dqn_tuned, pg, pg_tuned, ...), in the catalogue's order."""
    names = set(policies)
    return [n for n in CATALOGUE.reinforcement_learning() if n in names]


def pool(folds: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The outcomes of every fold (fold name -> outcomes.parquet's table) in one, with a
    ``fold`` column; a sample validated by two folds is refused (the folds must not overlap)."""
    out = pd.concat([o.assign(fold=name) for name, o in folds.items()], ignore_index=True)
    keys = [k for k in KEYS if k in out.columns]
    twice = out.duplicated(keys)
    if twice.any():
        raise MirageError(f"{int(twice.sum())} outcome(s) appear in more than one fold (e.g. "
                          f"sample {out.loc[twice, 'sample_id'].iloc[0]}); fix: give the "
                          "folds validation windows that do not overlap")
    return out


def pooled_evaluation(out: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pooled folds' (``pool``) evaluation.csv and seeds.csv: every policy's metrics over
    all the folds' validation samples, per simulator mode, chain size and load level, as
    ``mirage evaluate`` writes them for one validation window."""
    return evaluation_tables(out.drop(columns="fold"))


def _row(key: dict, comparison: str, policy: str, against: str, value: float, low: float,
         high: float, unit: str, verdict_: str, n_to_decide: float = np.nan) -> dict:
    return {**key, "comparison": comparison, "policy": policy, "against": against,
            "value": value, "low": low, "high": high, "unit": unit, "verdict": verdict_,
            "n_to_decide": n_to_decide}


def _cost_rows(cell: pd.DataFrame, key: dict, seed: int, margin_h: float,
               block: int) -> list[dict]:
    """The cost comparisons of one cell (best learned vs best baseline, every RL method vs
    reactive and vs the best non-RL learned policy)."""
    costs = cell.pivot_table(index="sample_id", columns="policy", values="cost").mean()
    policies = list(costs.index)
    rl = rl_methods(policies)
    learned = [p for p in policies if p not in NOT_LEARNED]
    pairs = [(BEST, learned, [p for p in policies if p in BASELINES])]
    for m in rl:
        pairs += [(f"{m} vs reactive", [m], ["reactive"] if "reactive" in costs else []),
                  (f"{m} vs best non-RL learned", [m], [p for p in learned if p not in rl])]
    rows = []
    for comparison, a, b in pairs:
        if not a or not b:
            continue
        tag = "/".join(map(str, [*key.values(), comparison]))
        d = paired_difference(cell, a, b, seed=[seed, zlib.crc32(tag.encode())], block=block)
        v = verdict(d, margin_h=margin_h)
        rows.append(_row(key, comparison, min(a, key=costs.get), min(b, key=costs.get),
                         d["diff"], d["low"], d["high"], "h", v,
                         samples_to_decide(d, margin_h) if v == "within noise" else np.nan))
    return rows


def _claim_rows(cell: pd.DataFrame, key: dict, seed: int, block: int) -> list[dict]:
    """The paper's two claims for every RL method of one cell (claims.py's interval)."""
    rows = []
    for m in rl_methods(cell["policy"].unique()):
        samples = per_sample(cell, m)
        for claim, (low_end, _, unit, _) in PAPER_CLAIMS.items():
            tag = "/".join(map(str, [*key.values(), m, claim]))
            iv = cell_interval(samples, claim, [seed, zlib.crc32(tag.encode())], block)
            if np.isnan(iv["value"]):
                v = NOT_APPLICABLE  # reactive never interrupted here: nothing to reduce
            elif iv["n"] < MIN_BOOTSTRAP_SAMPLES:
                v = TOO_FEW
            else:
                v = cell_verdict(iv, low_end)
            rows.append(_row(key, f"{m}: {CLAIM_NAMES[claim]}", m, f">= {low_end:g} {unit}",
                             iv["value"], iv["low"], iv["high"], unit, v))
    return rows


def rolling_verdicts(out: pd.DataFrame, seed: int = 0, margin_h: float = EQUIVALENCE_H,
                     block: int = 1) -> pd.DataFrame:
    """The pooled verdicts (module docstring) of the folds' outcomes ``out`` (``pool``), one
    row per cluster, mode, chain size, load level and comparison; a load level without
    samples is left out. A cost comparison within noise gets ``n_to_decide``: about how many
    samples would decide it (metrics.samples_to_decide, with the equivalence margin
    ``margin_h``). ``block``: the bootstrap's blocks of successive samples
    (metrics.resample_weights)."""
    rows = []
    for (cluster, mode, nodes), setting in out.groupby(["cluster", "mode", "chain_nodes"],
                                                       sort=True):
        for level in LOAD_LEVELS + (ALL,):
            cell = setting if level == ALL else setting[setting["load_level"] == level]
            if cell.empty:
                continue
            key = {"cluster": cluster, "mode": mode, "chain_nodes": int(nodes),
                   "load_level": level, "n": int(cell["sample_id"].nunique()),
                   "folds": int(cell["fold"].nunique()) if "fold" in cell else 1}
            rows += (_cost_rows(cell, key, seed, margin_h, block)
                     + _claim_rows(cell, key, seed, block))
    return pd.DataFrame(rows, columns=COLUMNS)


def _cell_text(r) -> str:
    scale, unit = (100.0, " %") if r.unit == "share" else (1.0, " %" if r.unit == "%" else "")
    digits = 2 if r.unit == "h" else 0
    if np.isnan(r.value):
        return r.verdict
    pick = f"{r.policy} - {r.against}: " if r.comparison == BEST else ""
    more = (f" (~{r.n_to_decide:,.0f} samples to decide)"
            if r.verdict == "within noise" and np.isfinite(r.n_to_decide) else "")
    return (f"{pick}{scale * r.value:.{digits}f}{unit} [{scale * r.low:.{digits}f}, "
            f"{scale * r.high:.{digits}f}] {r.verdict}{more}")


def _blocks_text(block_hours: float) -> str:
    return (f" over blocks of {block_hours:g} h of successive samples (block bootstrap)"
            if block_hours > 0 else "")


def rolling_markdown(table: pd.DataFrame, label: str = "", margin_h: float = EQUIVALENCE_H,
                     block_hours: float = 0.0) -> str:
    """rolling.md: per simulator mode, one table of the cost comparisons and one of the
    paper's claims, a row per chain size and load level, a column per comparison."""
    decided = table[table["n"] >= MIN_BOOTSTRAP_SAMPLES]
    counts = decided["verdict"].value_counts()
    lines = [f"# {label + ': ' if label else ''}rolling-origin evaluation, pooled folds", "",
             f"Every fold trains on the samples before its validation window; the folds' "
             f"validation samples pooled. Cost: interruption + c_O x overlap, hours per "
             f"handover; a difference < 0 means the first is cheaper. 95 % paired bootstrap "
             f"intervals{_blocks_text(block_hours)} (simultaneous over the candidates where the "
             f"best of several is picked); a verdict only in cells of >= {MIN_BOOTSTRAP_SAMPLES} samples: better / "
             f"worse where the interval excludes 0, equivalent where it lies within "
             f"+-{margin_h:g} h, within noise otherwise (with about how many samples of the same "
             "spread would decide it). Claims: the measured value [interval] against the "
             "paper's lower end.", "",
             f"Verdicts in cells of >= {MIN_BOOTSTRAP_SAMPLES} samples: "
             + ", ".join(f"{v} {c}" for v, c in counts.items()), ""]
    for mode, part in table.groupby("mode", sort=False):
        part = part.assign(text=[_cell_text(r) for r in part.itertuples()])
        claims = part["unit"] != "h"
        for title, rows in (("cost", part[~claims]), ("the paper's claims", part[claims])):
            if rows.empty:
                continue
            wide = rows.pivot_table(index=["chain_nodes", "load_level", "n", "folds"],
                                    columns="comparison", values="text", aggfunc="first",
                                    sort=False).reset_index()
            wide.columns.name = None
            order = {lvl: i for i, lvl in enumerate(LOAD_LEVELS + (ALL,))}
            wide = wide.sort_values(["chain_nodes", "load_level"], kind="stable",
                                    key=lambda c: c.map(order) if c.name == "load_level" else c)
            lines += [f"## {mode}: {title}", "", to_markdown(wide.fillna("-")), ""]
    return "\n".join(lines) + "\n"


def _rolling_cmd(args) -> None:
    if len(args.fold) < 1:
        raise MirageError("no --fold given; fix: pass --fold NAME OUTCOMES for every fold")
    for _, path in args.fold:
        if not Path(path).exists():
            raise MirageError(f"{path}: no outcomes; fix: run `mirage evaluate` on that fold")
    out = pool({name: pd.read_parquet(path) for name, path in args.fold})
    block = block_length(args.block_hours, args.every_hours)
    table = rolling_verdicts(out, args.seed, args.equivalence_h, block)
    Path(args.table).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.table, index=False)
    text = rolling_markdown(table, args.label, args.equivalence_h, args.block_hours)
    Path(args.out).write_text(text)
    if args.evaluation:
        evaluation, spread = pooled_evaluation(out)
        Path(args.evaluation).parent.mkdir(parents=True, exist_ok=True)
        evaluation.to_csv(args.evaluation, index=False)
        spread.to_csv(Path(args.evaluation).with_name("seeds.csv"), index=False)
    print(text)


def register(sub) -> None:
    p = sub.add_parser("rolling", help="rolling-origin evaluation: the folds' outcomes pooled "
                       "into one table of verdicts")
    p.add_argument("--fold", nargs=2, action="append", required=True,
                   metavar=("NAME", "OUTCOMES"),
                   help="a fold's name and its outcomes.parquet (mirage evaluate); repeatable")
    p.add_argument("--label", default="", help="the cluster's label, the heading of rolling.md")
    options.add_seed(p, "seeds the bootstrap intervals")
    options.add_equivalence(p, EQUIVALENCE_H)
    options.add_blocks(p, BLOCK_HOURS)
    p.add_argument("--table", required=True, help="rolling.csv")
    p.add_argument("--out", required=True, help="rolling.md")
    p.add_argument("--evaluation", help="also the pooled folds' evaluation.csv (seeds.csv beside "
                   "it), as `mirage evaluate` writes one window's: what `mirage expected` checks")
    p.set_defaults(func=_rolling_cmd)
