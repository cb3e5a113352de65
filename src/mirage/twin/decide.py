"""The workflow's twin step (rule decide_twin, ``mirage samples twin``): the twin fitted on the
training split's jobs (tuned first for ``twin_tuned``), replayed on every validation sample of
one chain size, and saved as a model directory `mirage evaluate` scores
(:class:`~mirage.policies.replayed.ReplayedDecisions`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd

from mirage.errors import MirageError
from mirage.outcomes import SampleSet
from mirage.policies.replayed import ReplayedDecisions
from mirage.samples.shards import cluster_for
from mirage.sim import JobTable
from mirage.twin.policy import TwinPolicy
from mirage.twin.replay import TwinEvalError, ids_in_time_order, print_progress, run_twin
from mirage.twin.tune import tune_twin
from mirage.twin.world import with_inferred_dependencies


def replay_twin(train: pd.DataFrame, validation: pd.DataFrame, data: SampleSet, cluster, *,
                chain_nodes: int, seed: int = 0, params: dict | None = None, c_I: float = 1.0,
                c_O: float = 0.5, progress=None, tune: dict | None = None, echo=None):
    """The twin fitted on the training split's jobs (``train``, canonical; dependencies
    inferred where ``cluster`` infers them) and replayed on every validation sample of
    ``chain_nodes`` in ``data``: a fitted
    :class:`~mirage.policies.replayed.ReplayedDecisions` (what `mirage evaluate` scores) and
    the timing frame of :func:`run_twin`. ``tune`` (``twin_tuned``: keyword arguments of
    :func:`tune_twin`, e.g. ``{"every": 8}``): the quantile level, tolerance and plan veto (the
    plan rule: its overlap weight) are chosen on the training samples first (``echo(line)`` is
    told the choice before the replay); the sweep is in ``info_["tuning"]``."""
    ids = ids_in_time_order(data, chain_nodes)
    if not ids:
        raise TwinEvalError(f"no validation samples with chain_nodes={chain_nodes}. Fix: pass "
                            "the run's samples and one of its chain sizes")
    params = dict(params or {})
    tuning = None
    if tune is not None:
        chosen, sweep_table, tuning = tune_twin(train, data, cluster, chain_nodes=chain_nodes,
                                                seed=seed, params=params, c_I=c_I, c_O=c_O,
                                                progress=progress, **tune)
        params.update(chosen)
        tuning["sweep"] = sweep_table.to_dict("records")
        if echo is not None:
            echo(f"tuned on {tuning['tune_samples']} training samples in {tuning['tune_seconds']:.0f} s: "
                 f"{chosen} (cost / reactive {tuning['tune_cost_ratio']:.3f}, untuned "
                 f"{tuning['untuned_cost_ratio']}); replaying the validation samples")
    t0 = time.perf_counter()
    policy = TwinPolicy(**{"c_I": c_I, "c_O": c_O, **params})
    policy.fit(trace=with_inferred_dependencies(train, cluster), seed=seed)
    fit_s = time.perf_counter() - t0
    res, timing = run_twin(policy, data, JobTable.from_frame(validation), cluster,
                           sample_ids=ids, progress=progress)
    asked = timing[timing["draws"] > 0] if len(timing) else timing
    info = {"fit_seconds": round(fit_s, 2), "decide_seconds": round(time.perf_counter() - t0 - fit_s, 2),
            "decisions_asked": int(len(asked)),
            "median_decision_s": float(asked["seconds"].median()) if len(asked) else 0.0,
            "validation_samples": len(ids)}
    if tuning is not None:
        info["tuning"] = tuning
    name = "twin" if tune is None else "twin_tuned"
    out = ReplayedDecisions(name, policy.get_params()).fit(res[["sample_id", "k"]], seed, info)
    return out, timing


def decide_twin(out, *, trace_dir, samples, cluster: str, mode: str, cluster_file: str | None,
                chain_nodes: int, seed: int, policy: str = "twin", params: dict | None = None,
                c_I: float = 1.0, c_O: float = 0.5) -> Path:
    """Replay ``policy`` (``twin``, or ``twin_tuned``: tuned first, its ``params`` may add
    ``tune_every``, ``tune_blocks``) on the validation samples of ``chain_nodes`` in the
    SampleSet ``samples``, fitted on ``trace_dir``'s train.parquet and simulated with
    ``cluster``'s description in ``mode``; writes ``out``/model.joblib, timing.csv and fit.json
    and returns ``out``."""
    out, trace = Path(out), Path(trace_dir)
    for f in (trace / "train.parquet", trace / "validation.parquet", Path(samples)):
        if not f.exists():
            raise MirageError(f"{f}: missing. Fix: pass the run's trace split directory "
                              "(results/<run>/<cluster>/trace) and its samples")
    params, tune = _tuning(policy, params)
    data = SampleSet.load(samples)
    label = f"{policy} {mode} n={chain_nodes}"
    replayed, timing = replay_twin(pd.read_parquet(trace / "train.parquet"),
                                   pd.read_parquet(trace / "validation.parquet"), data,
                                   cluster_for(cluster, mode, cluster_file),
                                   chain_nodes=chain_nodes, seed=seed, params=params, c_I=c_I,
                                   c_O=c_O, progress=print_progress(label), tune=tune,
                                   echo=lambda m: print(f"{label}: {m}", flush=True))
    _save(out, replayed, timing, policy=policy, seed=seed, chain_nodes=chain_nodes,
          train_samples=len(ids_in_time_order(data, chain_nodes, split="train")))
    _report(label, replayed.info_, out)
    return out


def _tuning(policy: str, params: dict | None) -> tuple[dict, dict | None]:
    """The twin's params without the tuning's, and the tuning's keyword arguments of
    :func:`tune_twin` (None: ``twin``, not tuned)."""
    params = dict(params or {})
    if policy == "twin_tuned":
        return params, {"every": int(params.pop("tune_every", 8)),
                        "n_blocks": int(params.pop("tune_blocks", 4))}
    if {"tune_every", "tune_blocks"} & set(params):
        raise MirageError("tune_every / tune_blocks are twin_tuned's parameters. Fix: use "
                          "--policy twin_tuned or drop them")
    return params, None


def _save(out: Path, replayed: ReplayedDecisions, timing: pd.DataFrame, *, policy: str, seed: int,
          chain_nodes: int, train_samples: int) -> None:
    """The model directory: model.joblib, timing.csv and fit.json (what mirage evaluate reads)."""
    out.mkdir(parents=True, exist_ok=True)
    model = replayed.save(out / "model.joblib")
    timing.to_csv(out / "timing.csv", index=False)
    info = {"policy": policy, "params": replayed.params, "seed": seed,
            "chain_nodes": chain_nodes, "train_samples": int(train_samples),
            "train_points": None, "fit_seconds": replayed.info_["fit_seconds"],
            "model": model.name, "replayed": replayed.info_}
    (out / "fit.json").write_text(json.dumps(info, indent=2, default=str) + "\n")


def _report(label: str, info: dict, out: Path) -> None:
    """What the replay chose (``twin_tuned``) and cost, one line each."""
    if "tuning" in info:
        t = info["tuning"]
        print(f"{label}: chose {t['chosen']} on {t['tune_samples']} training samples in "
              f"{t['tune_seconds']:.0f} s (cost / reactive {t['tune_cost_ratio']:.3f}, the "
              f"untuned twin's {t['untuned_cost_ratio']})")
    print(f"{label}: {info['validation_samples']} validation samples replayed in "
          f"{info['decide_seconds']:.0f} s (median decision {info['median_decision_s']:.3f} s) -> {out}")
