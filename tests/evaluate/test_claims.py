"""The workflow's verdict on a run (mirage.evaluate.claims, rule check_claims)."""

import shutil
import numpy as np
import pandas as pd
from runs import copy_checkout, snakemake

from mirage.evaluate.claims import NOT_APPLICABLE, NOT_REPRODUCED, REPRODUCED, paper_claims


def _table(reduction, zero_share, policies=("reactive", "pg", "rf", "oracle")):
    rows = []
    for cluster in ("frontera", "ls6"):
        for level in ("low", "medium", "heavy", "all"):
            for p in policies:
                learned = p in ("pg", "rf")
                rows.append({"cluster": cluster, "mode": "compat", "chain_nodes": 1,
                             "load_level": level, "policy": p, "n": 10,
                             "interruption_reduction_pct": reduction if learned else 0.0,
                             "zero_interruption_share": zero_share if learned else 0.1,
                             "cost": 1.0 if p == "pg" else 2.0,
                             "mean_interruption_h": 1.0, "mean_overlap_h": 0.1})
    return pd.DataFrame(rows)


def _verdicts(claims):
    return dict(zip(claims["claim"].str.split().str[0] + "/" + claims["policy"], claims["verdict"]))


def test_claims_hold_when_every_cell_reaches_the_papers_lower_end():
    claims = paper_claims(_table(40.0, 0.5), {"frontera": "synthetic", "ls6": "real"})
    assert set(claims["verdict"]) == {REPRODUCED}
    assert (claims["cells"] == 6).all()  # 2 clusters x 3 load levels, "all" is no cell
    assert claims["traces"].iloc[0] == "frontera, ls6 (real/synthetic)"


def test_one_cell_below_the_lower_end_is_not_reproduced_and_named():
    table = _table(40.0, 0.5)
    bad = (table["cluster"] == "ls6") & (table["load_level"] == "heavy") & (table["policy"] == "pg")
    table.loc[bad, "interruption_reduction_pct"] = 5.0
    claims = paper_claims(table)
    row = claims[(claims["policy"] == "pg") & claims["claim"].str.startswith("interruption")].iloc[0]
    assert row["verdict"] == NOT_REPRODUCED
    assert "1 of 6 cells" in row["why"] and "ls6 heavy" in row["why"] and "5 %" in row["why"]
    assert row["measured_min"] == 5.0 and row["measured_max"] == 40.0


def test_without_the_policy_or_anything_to_reduce_the_claim_does_not_apply():
    claims = paper_claims(_table(40.0, 0.5, policies=("reactive", "rf", "oracle")))
    pg = claims[claims["reading"].str.startswith("paper")]
    assert set(pg["verdict"]) == {NOT_APPLICABLE}
    table = _table(np.nan, 0.5)  # reactive never interrupted: reduction undefined
    claims = paper_claims(table)
    red = claims[claims["claim"].str.startswith("interruption")]
    assert set(red["verdict"]) == {NOT_APPLICABLE} and red["why"].str.contains("nothing to reduce").all()


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
