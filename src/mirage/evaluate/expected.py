"""Expected values with tolerances, for artifact evaluators.

``results/expected/<name>.csv`` holds, for one config, the headline figures of a reference run
(one row per cluster, mode, chain size, load level, policy and metric) with an absolute
tolerance each. ``mirage expected check`` compares a fresh ``evaluation.csv`` with it and says,
row by row, what is within tolerance; ``mirage expected write`` makes the file from a run.

Every step of the pipeline is seeded and the torch fits are held to one code path on every x86
CPU (``mirage.policies``), so the same library versions reproduce the reference exactly; the
tolerances are for what is left (another BLAS, another platform).

A policy fitted with several training seeds (``policies.training_seeds``) is checked on its
mean over seeds, with a tolerance measured from the reference's spread over seeds (``seeds.csv``):
``SPREAD_SIGMAS`` standard errors of the difference of two such means, when that is wider than
the fixed tolerance. Where even that is wider than ``RANGE_AT`` of the value, a point check
would say nothing: the row is a ``range`` (``check`` column), the reference seeds' min to max
widened by the fixed tolerance, and the check reports the measured mean against it. Every row
passes when the measured value lies in ``[low, high]``.

A reference is written only by ``mirage expected regenerate CONFIG``: the config run from
nothing in a fresh directory with this checkout's code, never from a working tree whose older
outputs Snakemake might keep.
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
#: a seeded value's tolerance: this many standard errors of the difference of two means over
#: n seeds (sqrt(2 / n) seed standard deviations each)
SPREAD_SIGMAS = 3.0
#: a seeded value whose tolerance would exceed this share of its magnitude is checked as a range
RANGE_AT = 0.5
COLUMNS = KEYS + ["metric", "expected", "tolerance", "check", "low", "high"]
REQUIRED = KEYS + ["metric", "expected", "tolerance"]  # files written before seeds were checked


def expected_from(table: pd.DataFrame, load_levels=("all",),
                  seeds: pd.DataFrame | None = None) -> pd.DataFrame:
    """The expected-values table of an evaluation table (the rows of ``load_levels``), with
    the spread over training seeds of ``seeds`` (seeds.csv) where a policy had several."""
    missing = [c for c in KEYS + list(TOLERANCES) if c not in table.columns]
    if missing:
        raise MirageError(f"evaluation table lacks column(s) {missing}. Fix: pass the "
                          "evaluation.csv that `mirage evaluate` wrote")
    rows = table[table["load_level"].isin(load_levels)]
    out = rows.melt(id_vars=KEYS, value_vars=list(TOLERANCES), var_name="metric",
                    value_name="expected")
    floor = out["metric"].map({m: t[0] for m, t in TOLERANCES.items()})
    rel = out["metric"].map({m: t[1] for m, t in TOLERANCES.items()})
    base = np.maximum(floor, rel * out["expected"].abs())
    tol, check_kind = base.copy(), pd.Series("point", index=out.index)
    low, high = out["expected"] - base, out["expected"] + base
    if seeds is not None and len(seeds):
        spread = seeds.astype({"chain_nodes": "int64"}).rename(columns={"mean": "_mean"})
        sp = out.astype({"chain_nodes": "int64"}).merge(
            spread[KEYS + ["metric", "seeds", "std", "min", "max"]],
            on=KEYS + ["metric"], how="left")
        seeded = sp["seeds"].fillna(1).to_numpy() > 1
        spread_tol = (SPREAD_SIGMAS * sp["std"].fillna(0.0) * np.sqrt(2.0 / sp["seeds"].fillna(1))
                      ).to_numpy()
        wide = seeded & (spread_tol > np.maximum(base, RANGE_AT * out["expected"].abs()))
        tol = pd.Series(np.where(seeded, np.maximum(base, spread_tol), base), index=out.index)
        low = pd.Series(np.where(wide, sp["min"] - base, out["expected"] - tol), index=out.index)
        high = pd.Series(np.where(wide, sp["max"] + base, out["expected"] + tol), index=out.index)
        check_kind = pd.Series(np.where(wide, "range", "point"), index=out.index)
    out["tolerance"] = tol.round(4)
    out["check"] = check_kind
    out["low"], out["high"] = low.round(4), high.round(4)
    out["expected"] = out["expected"].round(4)
    return out.sort_values(KEYS + ["metric"]).reset_index(drop=True)[COLUMNS]


def read_expected(path) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise MirageError(f"{path}: no such expected-values file. Fix: pass one of "
                          "results/expected/*.csv")
    exp = pd.read_csv(path)
    missing = [c for c in REQUIRED if c not in exp.columns]
    if missing:
        raise MirageError(f"{path}: missing column(s) {missing}. Fix: regenerate it with "
                          "`mirage expected regenerate`")
    if "check" not in exp.columns:  # a file of single-seed points: expected +- tolerance
        exp["check"] = "point"
        exp["low"] = (exp["expected"] - exp["tolerance"]).round(4)
        exp["high"] = (exp["expected"] + exp["tolerance"]).round(4)
    return exp[COLUMNS]


def check(table: pd.DataFrame, expected: pd.DataFrame) -> pd.DataFrame:
    """Every expected row with the measured value, the difference and ``ok``; a row the run
    does not have is measured as NaN and fails."""
    long = table.melt(id_vars=KEYS, value_vars=[m for m in TOLERANCES if m in table.columns],
                      var_name="metric", value_name="measured")
    exp = expected.astype({"chain_nodes": "int64"})
    long = long.astype({"chain_nodes": "int64"})
    out = exp.merge(long, on=KEYS + ["metric"], how="left")
    out["difference"] = (out["measured"] - out["expected"]).round(4)
    out["ok"] = ((out["measured"] >= out["low"] - 1e-9) & (out["measured"] <= out["high"] + 1e-9))
    return out


def read_evaluations(paths) -> pd.DataFrame:
    """The evaluation tables of a run's clusters as one table, or an error naming the missing one."""
    tables = []
    for path in paths:
        if not Path(path).exists():
            raise MirageError(f"{path}: no such evaluation table. Fix: run the workflow's "
                              "`evaluation` target with the config the expected values belong to")
        tables.append(pd.read_csv(path))
    return pd.concat(tables, ignore_index=True)


def read_seeds(paths) -> pd.DataFrame | None:
    """The seeds.csv beside each evaluation.csv of ``paths`` as one table; None when there is
    none (a run of one seed per policy, or written before seeds were reported)."""
    tables = [pd.read_csv(p) for p in (Path(e).with_name("seeds.csv") for e in paths)
              if p.exists()]
    tables = [t for t in tables if len(t)]
    return pd.concat(tables, ignore_index=True) if tables else None


def _check_cmd(args) -> None:
    from mirage.evaluate.metrics import to_markdown

    exp = read_expected(args.expected)
    res = check(read_evaluations(args.evaluation), exp)
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
    table = read_evaluations(args.evaluation)
    out = expected_from(table, tuple(args.load_levels), read_seeds(args.evaluation))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    print(f"{len(out)} expected values -> {args.out}")


def reference_tables(results: Path, config: dict) -> list[Path]:
    """The tables a reference is made of in a run's ``results/<run>`` directory: every
    cluster's evaluation.csv, or, for a rolling-origin evaluation (a cluster with
    ``rolling``), every such cluster's pooled ``rolling/evaluation.csv``."""
    rolling = [c for c, spec in config["clusters"].items() if spec.get("rolling")]
    if rolling:
        return [results / c / "rolling" / "evaluation.csv" for c in sorted(rolling)]
    return sorted(results.glob("*/evaluation.csv"))


def regenerate(config_path, out=None, *, cores: int = 2, keep=None) -> Path:
    """Run a config's evaluation from nothing in a fresh directory and write its expected values
    to ``results/expected/<name>.csv`` of this checkout (or ``out``): ``<name>`` is the run's
    name, an overlay's own file name (config/ls6-rolling.yaml: ls6-rolling.csv, the pooled
    folds' values, its target ``rolling_evaluation``)."""
    import shutil
    import subprocess
    import sys
    import tempfile

    import yaml

    from mirage.config import load_shipped, overlay_base, run_name, shipped_raw

    repo = Path(__file__).resolve().parents[3]
    snakefile = repo / "Snakefile"
    if not snakefile.exists():
        raise MirageError(f"{snakefile}: no Snakefile. Fix: run `mirage expected regenerate` "
                          "from a checkout of the project (pip install -e .)")
    config_path = Path(config_path).resolve()
    config = load_shipped(config_path)
    run = run_name(config, config_path)
    base = overlay_base(config_path)
    name = config_path.stem if base else run
    own = shipped_raw(config_path)  # an overlay over its base in one file, no defaults
    for cluster in own.get("clusters", {}).values():  # a local trace stays where it is
        if cluster.get("path") and not Path(cluster["path"]).is_absolute():
            cluster["path"] = str((Path.cwd() / cluster["path"]).resolve())
    own.setdefault("run", run)
    rolling = any(spec.get("rolling") for spec in config["clusters"].values())
    target = "rolling_evaluation" if rolling else "evaluation"
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix=f"mirage-expected-{name}-"))
    if work.exists() and any(work.iterdir()):
        raise MirageError(f"{work}: not empty. Fix: name a new directory; a reference is made "
                          "from nothing")
    work.mkdir(parents=True, exist_ok=True)
    cfg = work / "config.yaml"
    cfg.write_text(yaml.safe_dump(own, sort_keys=False))
    print(f"running {config_path.name} (run {run}, target {target}) from nothing in {work} ...",
          flush=True)
    res = subprocess.run([sys.executable, "-m", "snakemake", target, "-s", str(snakefile),
                          "-d", str(work), "--configfile", str(cfg), "--cores", str(cores),
                          "--quiet", "progress"])
    if res.returncode != 0:
        raise MirageError(f"the run of {config_path} failed (logs in {work}/logs/{run}); "
                          "nothing written")
    tables = reference_tables(work / "results" / run, config)
    table = read_evaluations(tables)
    out = Path(out) if out else repo / "results" / "expected" / f"{name}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    expected_from(table, seeds=read_seeds(tables)).to_csv(out, index=False)
    print(f"{len(tables)} evaluation table(s) -> {out}")
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _regenerate_cmd(args) -> None:
    regenerate(args.config, args.out, cores=args.cores, keep=args.keep)


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
    r = s.add_parser("regenerate", help="run a config from nothing in a fresh directory and "
                     "write its expected values (results/expected/<run>.csv; an overlay's: "
                     "results/expected/<overlay>.csv)")
    r.add_argument("config", help="config/<name>.yaml, or an overlay such as "
                   "config/ls6-rolling.yaml (merged over the config its `run` names)")
    r.add_argument("--out", help="default: results/expected/<run or overlay>.csv of this "
                   "checkout")
    r.add_argument("--cores", type=int, default=2)
    r.add_argument("--keep", help="run in this (new, empty) directory and keep it")
    r.set_defaults(func=_regenerate_cmd)
