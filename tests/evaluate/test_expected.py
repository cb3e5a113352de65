"""Expected values with tolerances (mirage.evaluate.expected) and `mirage expected`."""

import subprocess
import sys

import pandas as pd
import pytest

from mirage.evaluate.expected import check, expected_from
from mirage.errors import MirageError


def _table(cost_quantile=0.5):
    rows = []
    for level in ("low", "all"):
        for policy, c in (("reactive", 1.0), ("quantile", cost_quantile)):
            rows.append({"cluster": "ls6", "mode": "calibrated", "chain_nodes": 8,
                         "load_level": level, "policy": policy, "n": 10, "cost": c,
                         "mean_interruption_h": c, "mean_overlap_h": 0.0,
                         "zero_interruption_share": 0.5})
    return pd.DataFrame(rows)


def _mirage(*args):
    return subprocess.run([sys.executable, "-m", "mirage", *args], capture_output=True, text=True)


def test_expected_values_cover_the_chosen_levels_with_tolerances():
    exp = expected_from(_table())
    assert set(exp["load_level"]) == {"all"}
    assert len(exp) == 2 * 4  # two policies x four metrics
    cost = exp[(exp.metric == "cost") & (exp.policy == "reactive")].iloc[0]
    assert cost["tolerance"] == pytest.approx(0.15)  # 15 % of 1.0 beats the 0.05 floor
    share = exp[exp.metric == "zero_interruption_share"]
    assert (share["tolerance"] == 0.05).all()


def test_a_run_equal_to_the_reference_passes_a_drifted_one_fails():
    exp = expected_from(_table(0.5))
    assert check(_table(0.5), exp)["ok"].all()
    assert check(_table(0.55), exp)["ok"].all()  # within 0.075 = 15 % of 0.5
    res = check(_table(0.7), exp)
    bad = res[~res["ok"]]
    assert set(bad["metric"]) == {"cost", "mean_interruption_h"}
    assert set(bad["policy"]) == {"quantile"}


def test_a_row_the_run_lacks_fails():
    exp = expected_from(_table())
    res = check(_table()[lambda t: t.policy != "quantile"], exp)
    assert not res.loc[res.policy == "quantile", "ok"].any()


def test_a_table_without_the_metrics_is_refused():
    with pytest.raises(MirageError, match="lacks column"):
        expected_from(_table().drop(columns="cost"))


def test_command_line_check_exit_codes(tmp_path):
    ev = tmp_path / "evaluation.csv"
    _table(0.5).to_csv(ev, index=False)
    exp = tmp_path / "expected.csv"
    assert _mirage("expected", "write", str(ev), "--out", str(exp)).returncode == 0
    ok = _mirage("expected", "check", str(ev), "--expected", str(exp))
    assert ok.returncode == 0 and "8 of 8 expected values within tolerance" in ok.stdout
    _table(0.9).to_csv(ev, index=False)
    bad = _mirage("expected", "check", str(ev), "--expected", str(exp))
    assert bad.returncode == 2
    assert "outside tolerance" in bad.stderr and "quantile" in bad.stdout
    missing = _mirage("expected", "check", str(ev), "--expected", str(tmp_path / "nope.csv"))
    assert missing.returncode == 2 and "no such expected-values file" in missing.stderr


def _seeds(std, lo, hi, seeds=3):
    """seeds.csv rows of the quantile policy's cost and interruption (the table's 0.5)."""
    return pd.DataFrame([{"cluster": "ls6", "mode": "calibrated", "chain_nodes": 8,
                          "load_level": "all", "policy": "quantile", "metric": m,
                          "seeds": seeds, "mean": 0.5, "std": std, "min": lo, "max": hi}
                         for m in ("cost", "mean_interruption_h")])


def test_a_seeded_mean_is_checked_with_its_measured_spread_or_as_a_range():
    # a small spread: a point check, the tolerance widened to 3 standard errors of a difference
    exp = expected_from(_table(0.5), seeds=_seeds(0.05, 0.45, 0.55))
    cost = exp[(exp.metric == "cost") & (exp.policy == "quantile")].iloc[0]
    assert cost["check"] == "point"
    assert cost["tolerance"] == pytest.approx(round(3 * 0.05 * (2 / 3) ** 0.5, 4))
    assert check(_table(0.6), exp)["ok"].all()  # 0.1 off, inside 0.1225
    assert not check(_table(0.65), exp)["ok"].all()
    # reactive was fitted once: its fixed tolerance stays
    react = exp[(exp.metric == "cost") & (exp.policy == "reactive")].iloc[0]
    assert (react["check"], react["tolerance"]) == ("point", 0.15)
    # a spread too wide for a point: the reference seeds' range, widened by the fixed tolerance
    exp = expected_from(_table(0.5), seeds=_seeds(0.4, 0.1, 1.0))
    cost = exp[(exp.metric == "cost") & (exp.policy == "quantile")].iloc[0]
    assert cost["check"] == "range"
    assert (cost["low"], cost["high"]) == (pytest.approx(0.1 - 0.075), pytest.approx(1.075))
    assert check(_table(1.0), exp)["ok"].all()
    assert not check(_table(1.2), exp).query("policy == 'quantile' and metric == 'cost'")["ok"].any()


def test_a_file_written_before_seeds_reads_as_points(tmp_path):
    from mirage.evaluate.expected import REQUIRED, read_expected

    path = tmp_path / "old.csv"
    expected_from(_table(0.5))[REQUIRED].to_csv(path, index=False)
    exp = read_expected(path)
    assert (exp["check"] == "point").all()
    assert check(_table(0.55), exp)["ok"].all() and not check(_table(0.7), exp)["ok"].all()


def test_a_rolling_runs_reference_is_its_pooled_folds_tables(tmp_path):
    from mirage.evaluate.expected import reference_tables

    for cluster in ("ls6", "frontera"):
        (tmp_path / cluster).mkdir()
        (tmp_path / cluster / "evaluation.csv").write_text("")
    plain = {"clusters": {"ls6": {}, "frontera": {}}}
    assert reference_tables(tmp_path, plain) == [tmp_path / "frontera" / "evaluation.csv",
                                                 tmp_path / "ls6" / "evaluation.csv"]
    rolling = {"clusters": {"ls6": {"rolling": {"validation": [{"start": "2023-01-01",
                                                                "end": "2023-01-31"}]}},
                            "frontera": {}}}
    assert reference_tables(tmp_path, rolling) == [tmp_path / "ls6" / "rolling" / "evaluation.csv"]
