"""The run's report: what went in, how faithful the simulator was, and how every policy did.

``mirage report`` gathers the per-cluster outputs of the workflow into one markdown page
(``results/report.md``) and checks the project's goals on every evaluated cluster and chain
size, saying plainly where a goal is missed.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pandas as pd

from mirage import options
from mirage.errors import MirageError
from mirage.evaluate.metrics import (  # noqa: F401  (BASELINES: part of this module's API)
    ALL, BASELINES, BLOCK_HOURS, EQUIVALENCE_H, EQUIVALENT, MIN_BOOTSTRAP_SAMPLES, NOT_LEARNED,
    block_length, level_tradeoff, paired_difference, to_markdown, verdict,
)
from mirage.outcomes import OVERLAP_GOAL_H, ZERO_INTERRUPTION_GOAL
VERDICTS = ("better", "worse", EQUIVALENT, "within noise", "identical", "too few samples")


def goal_checks(table: pd.DataFrame, outcomes: pd.DataFrame | None = None,
                seed: int = 0, margin_h: float = EQUIVALENCE_H,
                block: int = 1) -> pd.DataFrame:
    """Per (cluster, mode, chain size, load level): does the best learned policy beat every
    baseline on cost, and does some learned policy reach >= 80 % zero interruption with a mean
    overlap under 6 h?

    With the per-sample ``outcomes`` (outcomes.parquet) each cell also gets the cost
    difference best learned - best baseline with its 95 % paired bootstrap interval
    (``diff_low``, ``diff_high``, seeded by ``seed``; simultaneous over every learned x
    baseline pair, so picking the best of each on these samples is accounted for, see
    metrics.paired_difference) and ``verdict_95``: "better" (the whole interval below zero),
    "worse" (above), "equivalent" (within +-``margin_h`` h), "within noise", "identical"
    or "too few samples" (under
    MIN_BOOTSTRAP_SAMPLES, where a bootstrap interval is too narrow to trust). A validation
    month leaves wide intervals, and a cell of a rare load level holds a few dozen samples at
    most, so a win or a miss by a few minutes may be noise; this says which. Across cells there
    is no correction: among a dozen cells, one may be decided by chance. ``block`` > 1
    resamples whole blocks of that many successive sample starts (metrics.resample_weights).
    """
    rows = []
    for key, g in table.groupby(["cluster", "mode", "chain_nodes", "load_level"], sort=False):
        learned = g[~g["policy"].isin(NOT_LEARNED)]
        base = g[g["policy"].isin(BASELINES)]
        if learned.empty or base.empty:
            continue
        best = learned.loc[learned["cost"].idxmin()]
        best_base = base.loc[base["cost"].idxmin()]
        ok_share = learned[(learned["zero_interruption_share"] >= ZERO_INTERRUPTION_GOAL)
                           & (learned["mean_overlap_h"] < OVERLAP_GOAL_H)]
        rows.append({
            "cluster": key[0], "mode": key[1], "chain_nodes": key[2], "load_level": key[3],
            "n": int(best["n"]),
            "best_learned": best["policy"], "best_learned_cost": best["cost"],
            "best_baseline": best_base["policy"], "best_baseline_cost": best_base["cost"],
            "beats_baselines": bool(best["cost"] < best_base["cost"]),
            "zero_interruption_goal": (ok_share.loc[ok_share["cost"].idxmin(), "policy"]
                                       if len(ok_share) else "missed"),
        })
        if outcomes is not None:
            rows[-1].update(_difference(outcomes, key, list(learned["policy"]),
                                        list(base["policy"]), seed, margin_h, block))
    return pd.DataFrame(rows)


def _difference(outcomes: pd.DataFrame, key: tuple, learned: list[str], baselines: list[str],
                seed: int, margin_h: float, block: int) -> dict:
    cluster, mode, nodes, level = key
    cell = outcomes[(outcomes["cluster"] == cluster) & (outcomes["mode"] == mode)
                    & (outcomes["chain_nodes"] == nodes)]
    if level != ALL:
        cell = cell[cell["load_level"] == level]
    # one stream per cell, the same whatever else the report holds
    cell_seed = [seed, zlib.crc32(f"{cluster}/{mode}/{nodes}/{level}".encode())]
    try:
        d = paired_difference(cell, learned, baselines, seed=cell_seed, block=block)
    except ValueError as e:
        raise MirageError(f"{cluster} {mode} {nodes} nodes, {level} load: {e}. outcomes.parquet "
                          "and evaluation.csv must come from the same `mirage evaluate` run; "
                          "rerun it") from None
    return {"cost_diff": d["diff"], "diff_low": d["low"], "diff_high": d["high"],
            "verdict_95": verdict(d, margin_h=margin_h)}


def build_report(results: Path, clusters: list[str], labels: dict[str, str] | None = None,
                 seed: int = 0, margin_h: float = EQUIVALENCE_H, block: int = 1) -> str:
    labels = labels or {}
    lines = ["# Mirage run report", ""]
    checks, tradeoffs = [], []
    for c in clusters:
        d = results / c
        lines += [f"## {labels.get(c, c)} (`{c}`)", ""]
        lines += _trace_section(d) + _fidelity_section(d) + _samples_section(d)
        ev = d / "evaluation.csv"
        if ev.exists():
            table = pd.read_csv(ev)
            overall = table[table["load_level"] == "all"].sort_values(["mode", "chain_nodes", "cost"])
            lines += ["### Policies on the validation samples (all load levels, sorted by cost)", "",
                      to_markdown(overall.drop(columns=["cluster", "load_level"])), "",
                      f"Every load level: `{c}/evaluation.md`. Figures: `{c}/figures/evaluation/`.", ""]
            outcomes = d / "outcomes.parquet"
            checks.append(goal_checks(table, pd.read_parquet(outcomes) if outcomes.exists()
                                      else None, seed, margin_h, block))
            tradeoffs.append(level_tradeoff(table, BASELINES))
    if checks:
        goals = pd.concat(checks, ignore_index=True)
        beaten = goals["beats_baselines"].mean()
        reached = (goals["zero_interruption_goal"] != "missed").mean()
        lines += [
            "## Goals", "",
            f"- best learned policy beats every baseline on cost in {beaten:.0%} of the "
            f"{len(goals)} (cluster, mode, chain size, load level) cells"
            + (_verdicts(goals["verdict_95"], margin_h) if "verdict_95" in goals else ""),
            f"- a learned policy reaches >= {ZERO_INTERRUPTION_GOAL:.0%} zero interruption with mean "
            f"overlap < {OVERLAP_GOAL_H:g} h in {reached:.0%} of the cells", "",
            to_markdown(goals), "",
        ]
        lines += _single_policy_section(pd.concat(tradeoffs, ignore_index=True))
    return "\n".join(lines) + "\n"


def _verdicts(verdicts: pd.Series, margin_h: float) -> str:
    counts = verdicts.value_counts()
    return ("; by the 95 % paired bootstrap interval of the cost difference the best learned "
            "policy is " + ", ".join(f"{v} in {counts[v]}" for v in VERDICTS if counts.get(v))
            + f" (verdicts need {MIN_BOOTSTRAP_SAMPLES} samples; equivalent: the interval "
            f"within +-{margin_h:g} h)")


def _single_policy_section(wide: pd.DataFrame) -> list[str]:
    """The strict reading of the cost goal: one learned policy cheaper than every baseline at
    every load level of a setting at once (the cells above may each have a different winner)."""
    learned = wide[~wide["policy"].isin(NOT_LEARNED)]
    keys = [k for k in ("cluster", "mode", "chain_nodes") if k in learned.columns]
    if learned.empty:
        return []
    winners = learned[learned["beats_all_levels"]].groupby(keys)["policy"].apply(", ".join)
    settings = learned[keys].drop_duplicates()
    table = settings.merge(winners.rename("one_policy_wins_every_level").reset_index(),
                           on=keys, how="left").fillna({"one_policy_wins_every_level": "none"})
    won = (table["one_policy_wins_every_level"] != "none").sum()
    return [f"One learned policy beats every baseline at every load level at once in {won} of "
            f"{len(table)} settings (figure: `<cluster>/figures/evaluation/"
            "level_tradeoff_<cluster>.png`):", "", to_markdown(table), ""]


def _trace_section(d: Path) -> list[str]:
    rep = d / "trace" / "clean_report.json"
    if not rep.exists():
        return []
    r = json.loads(rep.read_text())
    q = ", ".join(f"{k} {v}" for k, v in r["quarantined"].items()) or "none"
    return [f"- trace: {r['rows_in']} rows in, {r['rows_kept']} kept, quarantined: {q}; "
            f"runtimes clipped to the limit: {r['adjusted']['runtime_clipped']} "
            f"(figure `{d.name}/figures/trace/trace_overview.png`)"]


def _fidelity_section(d: Path) -> list[str]:
    rep = d / "sim" / "fidelity.json"
    if not rep.exists():
        return []
    r = json.loads(rep.read_text())
    keys = ("loo_mae_h", "loo_median_h", "loo_within_1h", "replay_corr", "replay_mape")
    cells = []
    for k in keys:
        v = r.get(k, {})
        cells.append(f"{k} " + " / ".join(_fmt(v.get(m)) for m in ("sim", "zero_wait", "compat")))
    return [f"- simulator fidelity on the whole trace (sim / zero-wait / compat): {'; '.join(cells)} "
            f"(figures `{d.name}/figures/fidelity/`)"]


def _samples_section(d: Path) -> list[str]:
    out = []
    for summary in sorted(d.glob("*/samples/summary.json")):
        rows = json.loads(summary.read_text())
        text = ", ".join(f"{r['split']} n={r['chain_nodes']}: {r['samples']}" for r in rows)
        out.append(f"- samples ({summary.parent.parent.name} simulator): {text}")
    return out + [""]


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def _report(args) -> None:
    labels = json.loads(args.labels)
    text = build_report(Path(args.results), args.clusters, labels, args.seed,
                        args.equivalence_h, block_length(args.block_hours, args.every_hours))
    Path(args.out).write_text(text)
    print(f"report -> {args.out}")


def register(sub) -> None:
    p = sub.add_parser("report", help="gather a run's outputs into one markdown report")
    p.add_argument("--results", default="results")
    p.add_argument("--clusters", nargs="+", required=True)
    p.add_argument("--labels", default="{}", help="JSON: cluster -> label")
    p.add_argument("--out", required=True)
    options.add_seed(p, "seed of the bootstrap intervals (the config's seed)")
    options.add_equivalence(p, EQUIVALENCE_H)
    options.add_blocks(p, BLOCK_HOURS)
    p.set_defaults(func=_report)
