"""Table-based evaluation: every policy's first submit per sample, looked up in the points table.

Reactive (last point) and oracle (cheapest point) outcomes are computed from the table itself
for every evaluation, whether or not they are among the policies, because the load level,
the interruption reduction and the oracle gap are all defined relative to them.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from mirage.policies.base import Policy
from mirage.policies.catalogue import BASELINE, CATALOGUE
# the sample tables' load levels and references live with the tables (policies tune on them)
from mirage.outcomes import (  # noqa: F401  (part of this module's API)
    ALL, LOAD_LEVELS, SampleSet, cost, load_level, reference_outcomes,
)

#: the rule baselines a learned policy is judged against, and everything that learns nothing
#: (the baselines and the oracle), from the policy catalogue
BASELINES = CATALOGUE.role(BASELINE)
NOT_LEARNED = CATALOGUE.not_learned()
GROUP_KEYS = ["cluster", "chain_nodes", "load_level", "policy"]
METRICS = ["n", "mean_interruption_h", "median_interruption_h", "mean_overlap_h",
           "overlap_node_hours", "zero_interruption_share", "interruption_reduction_pct",
           "cost", "oracle_gap"]


def outcomes(policies: dict[str, Policy], data: SampleSet, *, c_I: float = 1.0,
             c_O: float = 0.5) -> pd.DataFrame:
    """One row per (sample, policy): the chosen k, its x_h and the derived costs."""
    ref = reference_outcomes(data, c_I, c_O)
    meta = data.samples[["sample_id", "cluster", "chain_nodes"]].merge(ref, on="sample_id")
    starts = pd.Series(data.point_starts(),
                       index=data.points["sample_id"].to_numpy()[data.point_starts()])
    x_all = data.points["x_h"].to_numpy(dtype=float)
    frames = []
    for name, policy in policies.items():
        ks = policy.first_submit_all(data).reindex(meta["sample_id"])
        if ks.isna().any():
            raise ValueError(f"policy {name} gave no decision for some samples")
        k = ks.to_numpy(dtype=np.int64)
        x = x_all[starts.reindex(meta["sample_id"]).to_numpy() + k]
        frames.append(meta.assign(policy=name, k=k, x_h=x))
    out = pd.concat(frames, ignore_index=True)
    out["interruption_h"] = np.maximum(out["x_h"], 0.0)
    out["overlap_h"] = np.maximum(-out["x_h"], 0.0)
    out["overlap_node_hours"] = out["overlap_h"] * out["chain_nodes"]
    out["cost"] = cost(out["x_h"], c_I, c_O)
    return out


def _summary(g: pd.DataFrame) -> pd.Series:
    reactive_I = np.maximum(g["reactive_x_h"], 0.0).mean()
    mean_I = g["interruption_h"].mean()
    return pd.Series({
        "n": len(g),
        "mean_interruption_h": mean_I,
        "median_interruption_h": g["interruption_h"].median(),
        "mean_overlap_h": g["overlap_h"].mean(),
        # total, not mean: it is the waste the operator pays for
        "overlap_node_hours": g["overlap_node_hours"].sum(),
        "zero_interruption_share": (g["x_h"] <= 0).mean(),
        "interruption_reduction_pct": (100.0 * (reactive_I - mean_I) / reactive_I
                                       if reactive_I > 0 else np.nan),
        "cost": g["cost"].mean(),
        "oracle_gap": g["cost"].mean() - g["oracle_cost"].mean(),
    })


def _summarize(out: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    both = pd.concat([out, out.assign(load_level=ALL)], ignore_index=True)
    table = (both.groupby(keys, sort=False)[list(out.columns.difference(keys))]
             .apply(_summary).reset_index())
    table["n"] = table["n"].astype(int)
    order = {lvl: i for i, lvl in enumerate(LOAD_LEVELS + (ALL,))}
    pol_order = {p: i for i, p in enumerate(out["policy"].unique())}
    return table.sort_values(
        ["cluster", "chain_nodes", "load_level", "policy"] + keys[len(GROUP_KEYS):],
        key=lambda s: s.map(order) if s.name == "load_level"
        else s.map(pol_order) if s.name == "policy" else s,
        kind="stable").reset_index(drop=True)


def per_seed(out: pd.DataFrame) -> pd.DataFrame:
    """The summary of every (cluster, chain size, load level, policy) per training seed: one
    row per fit, with ``seed`` (outcomes without a ``seed`` column count as one fit)."""
    if "seed" not in out.columns:
        return _summarize(out, GROUP_KEYS)[GROUP_KEYS + METRICS].assign(seed=0)
    return _summarize(out, GROUP_KEYS + ["seed"])[GROUP_KEYS + ["seed"] + METRICS]


def summarize(out: pd.DataFrame) -> pd.DataFrame:
    """One row per (cluster, chain size, load level incl. "all", policy); see METRICS.

    A policy fitted with several training seeds (rows of ``out`` that differ in ``seed``) is
    summarised per seed and reported as the mean over its seeds, each metric alike (``n`` is
    the sample count, ``seeds`` the number of fits); ``seed_spread`` gives the spread.
    """
    fits = per_seed(out)
    table = (fits.groupby(GROUP_KEYS, sort=False)
             .agg(**{m: (m, "mean") for m in METRICS}, seeds=("seed", "nunique"))
             .reset_index())
    table["n"] = table["n"].round().astype(int)
    return table[GROUP_KEYS + METRICS + ["seeds"]]


#: the metrics whose spread over training seeds ``seed_spread`` reports
SPREAD_METRICS = ["cost", "mean_interruption_h", "mean_overlap_h", "zero_interruption_share",
                  "interruption_reduction_pct", "oracle_gap"]


def seed_spread(fits: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Over the training seeds of every policy fitted more than once: per cell and metric the
    mean, standard deviation, min, max and a Student-t ``level`` interval of the mean (with a
    handful of seeds, the range says more than the interval; both are reported, as "Deep RL
    that Matters" asks). ``fits`` is ``per_seed``'s table, with a ``mode`` column or without."""
    from scipy import stats

    keys = [k for k in ("cluster", "mode") if k in fits.columns] + GROUP_KEYS[1:]
    many = fits.groupby(keys, sort=False)["seed"].transform("nunique") > 1
    columns = keys + ["metric", "seeds", "mean", "std", "min", "max", "ci_low", "ci_high",
                      "values"]
    if not many.any():
        return pd.DataFrame(columns=columns)
    long = fits[many].melt(id_vars=keys + ["seed"], value_vars=SPREAD_METRICS,
                           var_name="metric", value_name="value")
    rows = []
    for key, g in long.groupby(keys + ["metric"], sort=False):
        v = g.sort_values("seed")["value"].to_numpy(dtype=float)
        ok = v[~np.isnan(v)]
        n = len(ok)
        mean = float(ok.mean()) if n else np.nan
        std = float(ok.std(ddof=1)) if n > 1 else np.nan
        half = float(stats.t.ppf(0.5 + level / 2, n - 1) * std / np.sqrt(n)) if n > 1 else np.nan
        rows.append(dict(zip(keys + ["metric"], key), seeds=len(v), mean=mean, std=std,
                         min=float(ok.min()) if n else np.nan,
                         max=float(ok.max()) if n else np.nan,
                         ci_low=mean - half, ci_high=mean + half,
                         values=" ".join(f"{x:.4g}" for x in v)))
    return pd.DataFrame(rows)[columns]


def evaluation_tables(out: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """evaluation.csv and seeds.csv of outcomes with a ``mode`` column (``outcomes`` of each
    simulator mode, stacked): ``summarize`` and ``seed_spread`` per mode, cluster and mode
    first."""
    tables, spreads = [], []
    for mode, part in out.groupby("mode", sort=False):
        part = part.drop(columns="mode")
        tables.append(summarize(part).assign(mode=mode))
        spreads.append(per_seed(part).assign(mode=mode))
    table = pd.concat(tables, ignore_index=True)
    table = table[["cluster", "mode"] + [c for c in table.columns if c not in ("cluster", "mode")]]
    return table, seed_spread(pd.concat(spreads, ignore_index=True))


def evaluate(policies: dict[str, Policy], data: SampleSet, *, c_I: float = 1.0,
             c_O: float = 0.5) -> pd.DataFrame:
    """One row per (cluster, chain_nodes, load_level incl. "all", policy); see METRICS."""
    return summarize(outcomes(policies, data, c_I=c_I, c_O=c_O))


def level_tradeoff(table: pd.DataFrame, baselines=None) -> pd.DataFrame:
    """Every policy's mean cost at each load level side by side, one row per (cluster, mode,
    chain size, policy), with ``beats_<level>``: cheaper than every baseline at that level,
    and ``beats_all_levels``.

    The goal "beat every baseline at every load level" asks one policy to win cells whose
    level is known only in hindsight; this table (drawn by
    mirage.figures.evaluation.level_tradeoff_figure) shows whether any single policy does, and
    how far each is from doing so. A level without samples in a group counts for every
    policy; a group without baselines has no winner.
    """
    if baselines is None:
        baselines = BASELINES
    keys = [k for k in ("cluster", "mode", "chain_nodes") if k in table.columns]
    per = table[table["load_level"] != ALL]
    wide = per.pivot_table(index=keys + ["policy"], columns="load_level", values="cost")
    levels = [lvl for lvl in LOAD_LEVELS if lvl in wide.columns]
    wide = wide[levels].reset_index()
    wide.columns.name = None
    wide["baseline"] = wide["policy"].isin(baselines)
    best_base = (wide[wide["baseline"]].groupby(keys)[levels].min()
                 .rename(columns=lambda lvl: f"_ref_{lvl}").reset_index())
    ref = wide[keys].merge(best_base, on=keys, how="left")  # keeps wide's row order
    has_base = wide[keys].merge(best_base[keys].assign(_has=1), on=keys, how="left")[
        "_has"].notna().to_numpy()
    for lvl in levels:
        mine, theirs = wide[lvl].to_numpy(dtype=float), ref[f"_ref_{lvl}"].to_numpy(dtype=float)
        absent = np.isnan(mine) & np.isnan(theirs)  # the group has no sample of this level
        with np.errstate(invalid="ignore"):
            wide[f"beats_{lvl}"] = has_base & ((mine < theirs) | absent)
    wide["beats_all_levels"] = wide[[f"beats_{lvl}" for lvl in levels]].all(axis=1)
    return wide


def to_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    """GitHub markdown without the optional ``tabulate`` dependency."""
    def fmt(v):
        if isinstance(v, (float, np.floating)):
            return "nan" if np.isnan(v) else f"{v:.{digits}f}"
        return str(v)
    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |",
             "|" + "|".join("---:" if pd.api.types.is_numeric_dtype(table[c]) else "---"
                            for c in cols) + "|"]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


# below this many samples a bootstrap interval is too narrow to support a verdict: with no
# true difference it excluded zero in 11 % of simulated cells of 20 samples, 6 % at 30 and 5 %
# at 40 (and, for a percentile interval, about 1 in 4 at 4 samples)
MIN_BOOTSTRAP_SAMPLES = 30


#: the default dependence horizon of successive samples (config ``evaluation.block_hours``):
#: a job running at one sample's handover may hold its nodes for the wall limit, 48 h, so the
#: queue two days on still remembers it
BLOCK_HOURS = 48.0


#: the fewest blocks a block bootstrap resamples (resample_weights shortens blocks below it)
MIN_BLOCKS = 10


def block_length(block_hours: float, every_hours: float) -> int:
    """Samples per resampled block: the dependence horizon ``block_hours`` over the spacing of
    sample starts ``every_hours`` (samples.every_hours), at least 1 (an ordinary bootstrap)."""
    if every_hours <= 0 or block_hours < 0:
        raise ValueError(f"block_hours {block_hours} / every_hours {every_hours}: need "
                         "block_hours >= 0 and every_hours > 0")
    return max(1, int(round(block_hours / every_hours)))


def resample_weights(sample_ids, n_boot: int, rng: np.random.Generator,
                     block: int = 1) -> np.ndarray:
    """``n_boot`` bootstrap resamples of the samples ``sample_ids`` as weights (n_boot, n): how
    often each sample is drawn. With ``block`` 1 the ordinary bootstrap (n draws of one
    sample). Else a block bootstrap over time: ``sample_id // block`` puts the samples of
    ``block`` successive starts in one block (sample ids number a chain size's samples in start
    order, mirage.samples), and each resample draws as many blocks as there are, with
    replacement, keeping every block whole. Successive samples share their queue (their starts
    are hours apart, their handovers meet the same running jobs), so drawing them one by one
    counts dependent samples as independent and gives intervals too narrow. Blocks are cut in
    time, not in the order of the samples given, so a subset (one load level) keeps only the
    dependence its samples really have. A resample of a handful of blocks says nothing (three
    blocks give a few distinct resamples and an interval far too narrow), so where the samples
    fall into fewer than MIN_BLOCKS blocks the blocks are shortened until they make MIN_BLOCKS
    (or one per sample): such a cell's interval is still too narrow, if less so."""
    ids = np.asarray(sample_ids)
    n = len(ids)
    block = int(block)
    while block > 1 and len(np.unique(ids // block)) < min(MIN_BLOCKS, n):
        block -= 1
    if block <= 1:
        idx = rng.integers(0, n, size=(n_boot, n))
        weights = np.zeros((n_boot, n))
        np.add.at(weights, (np.arange(n_boot)[:, None], idx), 1.0)
        return weights
    _, which = np.unique(ids // block, return_inverse=True)
    n_blocks = int(which.max()) + 1
    counts = rng.multinomial(n_blocks, np.full(n_blocks, 1.0 / n_blocks), size=n_boot)
    return counts[:, which].astype(float)


def resampled_means(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The mean of ``values`` (n,) or of each column of ``values`` (n, k) in every resample of
    ``weights`` (n_boot, n): (n_boot,) or (n_boot, k)."""
    return (weights @ values) / weights.sum(axis=1).reshape(-1, *([1] * (values.ndim - 1)))


def paired_difference(out: pd.DataFrame, a, b, *, n_boot: int = 2000,
                      seed: int | Sequence[int] = 0, level: float = 0.95,
                      block: int = 1) -> dict:
    """Mean cost of the best of policies ``a`` minus the best of policies ``b`` on the same
    samples of ``out`` (one evaluation cell), with a paired bootstrap interval over samples.

    ``a`` and ``b`` are a policy name or a list of names; "best" is the cheapest on these
    samples. Picking the cheapest of many on the very samples that judge it flatters it, so
    with lists the interval is simultaneous over every (a, b) pair: its half-width is the
    ``level`` quantile of the largest studentised deviation of any pair's resampled
    difference (the bootstrap max-t), so that the picked pair is covered as often as the
    level says, whichever pair the samples favour. With one name each it is the ordinary
    studentised bootstrap interval. Paired: all policies are scored on the same resampled
    samples, so the interval is for the difference itself. ``block`` > 1 resamples whole blocks
    of that many successive sample starts (resample_weights), for samples whose outcomes
    depend on their neighbours'.

    Returns {"diff", "low", "high", "n", "identical"}; ``identical``: the two picks give the
    same cost on every sample, to IDENTICAL_H (the interval then says nothing about noise; a
    policy's cost averaged over training seeds that all chose as reactive did differs from
    reactive's by rounding alone).
    """
    a_list = [a] if isinstance(a, str) else list(a)
    b_list = [b] if isinstance(b, str) else list(b)
    wide = out.pivot_table(index="sample_id", columns="policy", values="cost", dropna=False)
    missing = [p for p in a_list + b_list if p not in wide.columns]
    if missing:
        raise ValueError(f"policies {missing} are not in the outcomes")
    if wide.empty:
        raise ValueError("no samples in the outcomes")
    C = wide[a_list + b_list].to_numpy(dtype=float)
    if np.isnan(C).any():
        raise ValueError("some samples lack an outcome for some of the policies; the outcomes "
                         "do not come from one evaluation of every policy")
    na = len(a_list)
    means = C.mean(axis=0)
    best_a, best_b = int(np.argmin(means[:na])), int(np.argmin(means[na:]))
    d = C[:, best_a] - C[:, na + best_b]
    rng = np.random.default_rng(seed)
    boot = resampled_means(C, resample_weights(wide.index.to_numpy(), n_boot, rng, block))
    # every (a, b) pair's difference, observed and resampled: (pairs,), (n_boot, pairs)
    obs = (means[:na, None] - means[None, na:]).ravel()
    rs = (boot[:, :na, None] - boot[:, None, na:]).reshape(n_boot, -1)
    se = rs.std(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se > 0, np.abs(rs - obs) / se, 0.0)
    half = float(np.quantile(t.max(axis=1), level)) * se[best_a * (len(means) - na) + best_b]
    return {"diff": float(d.mean()), "low": float(d.mean() - half),
            "high": float(d.mean() + half), "n": len(d),
            "identical": bool(np.all(np.abs(d) <= IDENTICAL_H))}


#: two costs closer than this (hours) are the same outcome: floating-point rounding, not a choice
IDENTICAL_H = 1e-9
#: the default equivalence margin (config ``evaluation.equivalence_h``): a cost difference
#: whose whole interval lies within +-this many hours per handover is too small to act on
EQUIVALENCE_H = 0.25
EQUIVALENT = "equivalent"


def verdict(diff: dict, min_samples: int = MIN_BOOTSTRAP_SAMPLES,
            margin_h: float = 0.0) -> str:
    """What a paired_difference supports: "better" (the interval below zero), "worse" (above),
    "equivalent" (it holds zero but lies wholly within +-``margin_h`` hours, so a difference
    of a size worth acting on is ruled out: two one-sided tests, each at half the interval's
    error rate),
    "within noise" (it holds zero and reaches past the margin: more samples could decide),
    "identical" (the same outcome on every sample), or "too few samples". ``margin_h`` 0:
    no equivalence verdict."""
    if diff["identical"]:
        return "identical"
    if diff["n"] < min_samples:
        return "too few samples"
    if diff["high"] < 0:
        return "better"
    if diff["low"] > 0:
        return "worse"
    if margin_h > 0 and -margin_h < diff["low"] and diff["high"] < margin_h:
        return EQUIVALENT
    return "within noise"


def samples_to_decide(diff: dict, margin_h: float = 0.0) -> float:
    """For an undecided (within noise) paired_difference: about how many samples would decide
    it, were the per-sample spread and the mean difference what they are now (the interval's
    half-width shrinks as 1 / sqrt(n)): enough to exclude zero, or to fit within the
    equivalence margin, whichever comes first. inf where neither can (a mean difference of
    exactly the margin)."""
    half = (diff["high"] - diff["low"]) / 2
    target = max(abs(diff["diff"]), margin_h - abs(diff["diff"]))
    if half <= 0:
        return float(diff["n"])
    if target <= 0:
        return float("inf")
    return float(np.ceil(diff["n"] * (half / target) ** 2))
