"""Can one policy of our families beat every baseline at every load level, if it is tuned on
the validation samples themselves?

A diagnostic, not a policy: it reads the validation outcomes to choose, so nothing here may
feed a fitted policy. It answers whether the per-level cost goal is out of reach for the
families or only for their (training-only) tuning. For every setting (mode x chain size) it
scores on validation, per load level:

- the quantile lead's whole cross-fit grid (training window x veto x floor x cap x margin),
  with the model refitted on all training samples for each window;
- the fitted rf_tuned / xgb_tuned regressors with every threshold, veto margin on the plan
  (submit only if plan wait - time left >= d), cap on the time left and unvetoed floor;
- the no-model rule "lead L with plan margin d, or an unvetoed floor".

and prints, for each family, the best cost at one level among candidates that beat the best
baseline at the other. It also prints how well the level can be told at decision time: the
ROC AUC, per band of time left, of the plan's slack (f_plan_wait_h - time left) and of a
gradient-boosted classifier fitted on the training samples, for "medium or heavy" against
"low". Usage (after the ls6-real workflow):

    python docs/analysis/level_frontier.py results/ls6
"""

from __future__ import annotations

import sys
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd

from mirage.evaluate.metrics import reference_outcomes
from mirage.policies.baselines import plan_allows
from mirage.outcomes import SampleSet, compact_matrix, cost, mask_outcomes
from mirage.policies.quantile import QuantileLead, _window
from mirage.policies.registry import load_policy
from mirage.report import BASELINES


def level_costs(data: SampleSet, mask: np.ndarray, levels: np.ndarray) -> dict:
    c = cost(mask_outcomes(data, mask))
    return {lvl: c[levels == lvl].mean() for lvl in ("low", "medium") if (levels == lvl).any()}


def quantile_grid(train, val, levels, seed):
    q = QuantileLead()
    q.feature_columns_ = train.feature_columns
    pts = val.points
    allow = plan_allows(pts)
    candidates = q.candidates(train)  # the policy's own cross-fit grid
    for window in map(_window, q.windows):
        score = q._fit_model(train, seed, window, q.newsvendor_tau()).predict(
            compact_matrix(pts, q.feature_columns_))
        for c in candidates:
            mask = q._lead_mask(pts, score, c["margin_h"], c["floor_h"], c["cap_h"], c["gate"],
                                c["floor_gate"], allow)
            yield {"window": window, **c}, level_costs(val, mask, levels)


def regressor_grid(model, val, levels):
    pts = val.points
    run = pts["pred_running"].to_numpy(bool)
    rem = pts["pred_remaining_h"].to_numpy(float, na_value=np.nan)
    slack = pts["f_plan_wait_h"].to_numpy(float) - rem
    score = model.predict(pts)
    with np.errstate(invalid="ignore"):
        for th, d, cap, floor in product(np.arange(-3, 1.01, 0.25), (None, 0, 0.5, 1, 2),
                                         (0.5, 1, 2, 4, 8, 48), (0, 1 / 6, 1 / 3, 0.5)):
            veto = True if d is None else slack >= d
            mask = run & (((score >= th) & (rem <= cap) & veto) | (rem <= floor))
            yield dict(threshold=th, plan_margin=d, cap=cap, floor=floor), level_costs(
                val, mask, levels)


def plan_rule_grid(val, levels):
    pts = val.points
    run = pts["pred_running"].to_numpy(bool)
    rem = pts["pred_remaining_h"].to_numpy(float, na_value=np.nan)
    slack = pts["f_plan_wait_h"].to_numpy(float) - rem
    with np.errstate(invalid="ignore"):
        for lead, d, floor in product(np.arange(0, 12.01, 1 / 6), (0, 0.25, 0.5, 1, 2, 3),
                                      (0, 1 / 6, 1 / 3)):
            mask = run & (((rem <= lead) & (slack >= d)) | (rem <= floor))
            yield dict(lead=lead, plan_margin=d, floor=floor), level_costs(val, mask, levels)


def level_signal(train, val, seed):
    """ROC AUC of telling a non-low sample from a low one, per band of time left."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    def per_point(data):
        lv = reference_outcomes(data)["load_level"].to_numpy()
        n = np.diff(np.append(data.point_starts(), len(data.points)))
        rem = data.points["pred_remaining_h"].to_numpy(float, na_value=np.nan)
        return np.repeat(lv != "low", n), rem, data.points["pred_running"].to_numpy(bool)

    y_tr, rem_tr, run_tr = per_point(train)
    y_va, rem_va, run_va = per_point(val)
    with np.errstate(invalid="ignore"):
        fit_rows = run_tr & (rem_tr <= 8)
    clf = HistGradientBoostingClassifier(max_iter=100, min_samples_leaf=40, random_state=seed)
    clf.fit(compact_matrix(train.points[fit_rows], train.feature_columns), y_tr[fit_rows])
    p = clf.predict_proba(compact_matrix(val.points, train.feature_columns))[:, 1]
    slack = val.points["f_plan_wait_h"].to_numpy(float) - rem_va
    out = []
    for lo, hi in ((0, 0.5), (0.5, 1), (1, 2), (2, 4), (4, 8)):
        with np.errstate(invalid="ignore"):
            rows = run_va & (rem_va >= lo) & (rem_va < hi)
        if len(np.unique(y_va[rows])) == 2:
            out.append(f"{lo:g}-{hi:g} h left: plan slack {roc_auc_score(y_va[rows], slack[rows]):.2f}"
                       f", classifier {roc_auc_score(y_va[rows], p[rows]):.2f}")
    return out


def main(results: Path, seed: int = 20230) -> None:
    table = pd.read_csv(results / "evaluation.csv")
    for mode in sorted(table["mode"].unique()):
        data = SampleSet.load(results / mode / "samples")
        data = SampleSet(data.samples, data.points)  # the history is not needed
        for nodes in sorted(data.samples["chain_nodes"].unique()):
            part = data.subset(data.samples.loc[data.samples.chain_nodes == nodes, "sample_id"])
            train, val = part.split("train"), part.split("validation")
            levels = reference_outcomes(val)["load_level"].to_numpy()
            ev = table[(table["mode"] == mode) & (table.chain_nodes == nodes)
                       & table.policy.isin(BASELINES)]
            best = ev.groupby("load_level")["cost"].min()
            if not {"low", "medium"} <= set(best.index):
                continue
            print(f"\n{mode}, {nodes} node(s): best baseline low {best['low']:.3f}, "
                  f"medium {best['medium']:.3f}")
            print("  level signal (ROC AUC), " + "; ".join(level_signal(train, val, seed)))
            models = results / mode / "models" / f"n{nodes}"
            families = {"quantile grid": quantile_grid(train, val, levels, seed),
                        "plan rule": plan_rule_grid(val, levels)}
            for name in ("rf_tuned", "xgb_tuned"):
                families[f"{name} grid"] = regressor_grid(
                    load_policy(models / name / "model.joblib"), val, levels)
            for family, grid in families.items():
                rows = pd.DataFrame([{**p, **c} for p, c in grid])
                won = rows[(rows["low"] < best["low"]) & (rows["medium"] < best["medium"])]
                low_ok = rows[rows["low"] < best["low"]]["medium"].min()
                med_ok = rows[rows["medium"] < best["medium"]]["low"].min()
                print(f"  {family:15s} {len(rows):5d} candidates, {len(won)} win both; "
                      f"best medium among low winners {low_ok:.3f}, "
                      f"best low among medium winners {med_ok:.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/ls6"))
