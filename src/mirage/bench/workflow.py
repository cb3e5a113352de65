"""``mirage bench workflow``: where a workflow run spent its time, from the rules' benchmark files.

Every compute rule writes ``benchmarks/<run>/.../<rule>[_<wildcards>].tsv`` (Snakemake's
``benchmark:``: wall seconds, memory, CPU time). This groups them by rule and prints the jobs,
summed and longest seconds and each rule's share, and the run's wall time as the span of the
files (a file is written when its job ends: the job ran from its mtime minus its seconds).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from mirage.errors import MirageError

# the wildcard suffixes the rules put into benchmark names: _n<nodes>, _<shard>
_SUFFIX = re.compile(r"(_n\d+|_\d+)$")


def rule_of(path: Path) -> str:
    """``fit_dqn.s1_n8.tsv`` -> ``fit_dqn.s1``; ``sample_shard_3.tsv`` -> ``sample_shard``."""
    return _SUFFIX.sub("", path.stem)


def read_benchmarks(root) -> pd.DataFrame:
    root = Path(root)
    files = sorted(root.rglob("*.tsv"))
    if not files:
        raise MirageError(f"{root}: no benchmark files. Fix: pass benchmarks/<run> of a "
                          "finished workflow run")
    rows = []
    for f in files:
        t = pd.read_csv(f, sep="\t")
        if t.empty:
            continue
        last = t.iloc[-1]
        end = f.stat().st_mtime
        rows.append({"rule": rule_of(f), "path": str(f.relative_to(root)), "s": float(last["s"]),
                     "max_rss_mb": float(last.get("max_rss", float("nan"))),
                     "cpu_time_s": float(last.get("cpu_time", float("nan"))),
                     "start": end - float(last["s"]), "end": end})
    return pd.DataFrame(rows)


def summary(bench: pd.DataFrame) -> pd.DataFrame:
    g = bench.groupby("rule")
    out = pd.DataFrame({"jobs": g.size(), "total_s": g["s"].sum(), "max_s": g["s"].max(),
                        "max_rss_mb": g["max_rss_mb"].max()})
    out["share"] = out["total_s"] / out["total_s"].sum()
    return out.sort_values("total_s", ascending=False).reset_index()


def _bench_workflow(args) -> None:
    bench = read_benchmarks(args.benchmarks)
    table = summary(bench)
    wall = bench["end"].max() - bench["start"].min()
    busy = bench["s"].sum()
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}" if abs(v) >= 1
                          else f"{v:.3f}"))
    print(f"\n{len(bench)} jobs, {busy:.0f} s of job time; wall time {wall / 60:.1f} min "
          f"(first job start to last job end); {busy / wall:.2f} jobs running on average")


def register_bench(bsub) -> None:
    p = bsub.add_parser("workflow", help="where a workflow run spent its time (benchmark files)")
    p.add_argument("benchmarks", help="benchmarks/<run> of a finished run")
    p.set_defaults(func=_bench_workflow)
