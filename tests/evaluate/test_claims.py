"""The workflow's verdict on a run (mirage.evaluate.claims, rule check_claims)."""

import shutil
import numpy as np
import pandas as pd
from runs import copy_checkout, snakemake

from mirage.evaluate.claims import (NOT_APPLICABLE, NOT_REPRODUCED, REPRODUCED, TOO_FEW,
                                    WITHIN_NOISE, learning_pays, paper_claims)
from mirage.outcomes import load_level


def _outcomes(n=40, reduction=0.6, zero=0.5, policies=("reactive", "pg", "rf", "oracle"),
              reactive_h=(1.0, 6.0, 30.0), seed=0):
    """Per-sample outcomes of two clusters: n samples per load level (reactive X drawn in
    that level's band); a learned policy is uninterrupted on a ``zero`` share of the samples
    and cuts the interruption of the rest so that its mean falls by ``reduction``."""
    rng = np.random.default_rng(seed)
    rows = []
    for cluster in ("frontera", "ls6"):
        sid = 0
        for x_r in reactive_h:
            for i in range(n):
                r = x_r * rng.uniform(0.5, 1.5)
                sid += 1
                for p in policies:
                    if p in ("pg", "rf"):
                        hit = i >= round(zero * n)
                        # the interrupted ones carry the whole remaining interruption
                        x = r * (1 - reduction) / (1 - zero) if hit else -0.1
                    else:
                        x = r if p == "reactive" else 0.0
                    rows.append({"cluster": cluster, "mode": "calibrated", "chain_nodes": 1,
                                 "sample_id": sid, "policy": p, "x_h": x, "reactive_x_h": r,
                                 "cost": max(x, 0) + 0.5 * max(-x, 0) + (p == "rf") * 0.01})
    out = pd.DataFrame(rows)
    out["load_level"] = load_level(out["reactive_x_h"])
    return out


def _row(claims, claim, policy, cluster="ls6"):
    return claims[claims["claim"].str.startswith(claim) & (claims["policy"] == policy)
                  & (claims["cluster"] == cluster)].iloc[0]


def test_claims_hold_when_every_level_is_above_the_papers_lower_end_with_confidence():
    claims = paper_claims(_outcomes(), {"frontera": "synthetic stand-in", "ls6": "real"})
    assert set(claims["verdict"]) == {REPRODUCED}
    # per cluster, apart: 2 clusters x 2 claims x 2 readings
    assert len(claims) == 8 and set(claims["cluster"]) == {"frontera", "ls6"}
    assert set(claims.loc[claims["cluster"] == "ls6", "trace"]) == {"real"}
    row = _row(claims, "interruption", "pg")
    assert row["cells"] == "low (40), medium (40), heavy (40)"
    assert 45 < row["measured_min"] <= row["measured_max"] < 75  # about 60 % on every level
    assert "[" in row["measured"] and "n=40" in row["measured"]
    # the best learned policy is picked by cost: pg (rf costs 0.01 h more on every sample)
    assert set(claims.loc[claims["reading"].str.startswith("best"), "policy"]) == {"pg"}


def test_a_level_wholly_below_the_lower_end_is_not_reproduced_and_named():
    out = _outcomes()
    heavy = (out["cluster"] == "ls6") & (out["load_level"] == "heavy") & (out["policy"] == "pg")
    out.loc[heavy, "x_h"] = 0.95 * out.loc[heavy, "reactive_x_h"]  # a 5 % reduction
    row = _row(paper_claims(out), "interruption", "pg")
    assert row["verdict"] == NOT_REPRODUCED
    assert "heavy" in row["why"] and "5 %" in row["why"]
    # the other cluster is judged on its own
    assert _row(paper_claims(out), "interruption", "pg", "frontera")["verdict"] == REPRODUCED


def test_an_interval_spanning_the_lower_end_is_within_noise():
    out = _outcomes(zero=0.25)
    noisy = (out["cluster"] == "ls6") & (out["policy"] == "pg") & (out["load_level"] == "low")
    rng = np.random.default_rng(1)
    # about 25 % uninterrupted at low load, with sample noise: the interval spans 23 %
    out.loc[noisy, "x_h"] = np.where(rng.random(int(noisy.sum())) < 0.25, -0.1, 1.0)
    row = _row(paper_claims(out), "23-76", "pg")
    assert row["verdict"] == WITHIN_NOISE and "low" in row["why"]


def test_few_samples_per_level_pool_the_cluster_and_too_few_in_all_say_so():
    claims = paper_claims(_outcomes(n=12))  # 36 samples a cluster, no level with 30
    row = _row(claims, "interruption", "pg")
    assert row["verdict"] == REPRODUCED and row["cells"] == "all (36)"
    assert "all 36 samples together" in row["why"]
    claims = paper_claims(_outcomes(n=5))
    assert set(claims["verdict"]) == {TOO_FEW}


def test_without_the_policy_or_anything_to_reduce_the_claim_does_not_apply():
    claims = paper_claims(_outcomes(policies=("reactive", "rf", "oracle")))
    pg = claims[claims["reading"].str.startswith("paper")]
    assert set(pg["verdict"]) == {NOT_APPLICABLE}
    out = _outcomes(reactive_h=(0.0,))  # reactive never interrupted: nothing to reduce
    out.loc[out["policy"].isin(["pg", "rf"]), "x_h"] = -0.5
    red = paper_claims(out)
    red = red[red["claim"].str.startswith("interruption")]
    assert set(red["verdict"]) == {NOT_APPLICABLE}
    assert red["why"].str.contains("nothing to reduce").all()


def test_learning_pays_compares_the_best_of_each_with_a_paired_interval():
    table = learning_pays(_outcomes(), {"ls6": "real"})
    ls6 = table[table["cluster"] == "ls6"].set_index("comparison")
    best = ls6.loc["best learned vs best baseline"]
    # the oracle is no baseline: reactive is the only one here, and pg is far cheaper
    assert best["policy"] == "pg" and best["against"] == "reactive"
    assert best["verdict"] == "better" and best["high"] < 0 and best["n"] == 120
    assert ls6.loc["REINFORCE vs reactive", "verdict"] == "better"


def test_check_claims_rule_fails_with_the_values_that_are_off(tiny_run, tmp_path):
    """The rule itself, on a copy of the tiny run and of the workflow whose expected values have
    one value pushed out of its tolerance."""
    repo = copy_checkout(tmp_path / "repo")
    work = tmp_path / "work"
    shutil.copytree(tiny_run, work, symlinks=True)
    args = ["check_claims", "-s", str(repo / "Snakefile"), "-d", str(work), "--cores", "1",
            "--configfile", str(repo / "config" / "tiny.yaml"), "--forcerun", "check_claims"]
    ok = snakemake(*args)
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    assert "within tolerance" in (work / "results" / "tiny" / "claims.md").read_text()
    assert "rule fit_" not in ok.stdout + ok.stderr  # nothing else reran

    exp_path = repo / "results" / "expected" / "tiny.csv"
    exp = pd.read_csv(exp_path)
    i = exp.index[(exp["policy"] == "rf") & (exp["metric"] == "cost")][0]
    push = 10 * exp.loc[i, "tolerance"] + 1.0
    # the accepted band moves with the value (files with a check column state it as low..high)
    for col in ("expected", "low", "high"):
        if col in exp.columns:
            exp.loc[i, col] += push
    exp.to_csv(exp_path, index=False)
    bad = snakemake(*args)
    text = bad.stdout + bad.stderr
    assert bad.returncode != 0
    assert "1 of" in text and "outside the tolerance" in text
    assert "| rf |" in text.replace("  ", " ") or " rf " in text  # the off value is listed
    assert not (work / "results" / "tiny" / "claims.md").exists()  # a failed rule leaves nothing
