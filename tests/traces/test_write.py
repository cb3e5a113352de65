"""Writing a canonical table back out as TACC text: what the layout cannot carry is refused or
named, never dropped in silence."""

import pandas as pd
import pytest

from mirage.cli import main
from mirage.errors import MirageError
from mirage.traces.clean import clean_trace
from mirage.traces.write import write_tacc


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A small synthetic trace as the canonical table (it holds dependency chains)."""
    out = tmp_path_factory.mktemp("synth") / "t.parquet"
    assert main(["sim", "synth", "ls6", "--seed", "1", "--days", "3", "--start", "2023-01-01",
                 "--out", str(out)]) == 0
    return pd.read_parquet(out)


def test_a_table_with_dependencies_is_refused_as_text_naming_the_fix(synthetic, tmp_path):
    chains = int(synthetic["depends_on"].notna().sum())
    assert chains > 0
    with pytest.raises(MirageError, match=rf"depends_on \({chains} of {len(synthetic)} jobs\)"
                                          r".*Fix: write it as \.parquet"):
        write_tacc(synthetic, tmp_path / "t.log")
    assert not (tmp_path / "t.log").exists()


def test_text_written_with_the_chains_named_keeps_every_row_and_field(synthetic, tmp_path):
    chains = int(synthetic["depends_on"].notna().sum())
    assert write_tacc(synthetic, tmp_path / "t.log", dropping=("depends_on",)) == {"depends_on": chains}
    kept, quarantine, report = clean_trace(tmp_path / "t.log", cluster="ls6")
    assert report["rows_kept"] == len(synthetic) and len(quarantine) == 0
    a = synthetic.sort_values("job_id").reset_index(drop=True)
    b = kept.sort_values("job_id").reset_index(drop=True)
    for col in ("job_id", "submit", "start", "end", "time_limit_min", "nodes", "priority"):
        assert (a[col].astype(str) == b[col].astype(str)).all(), col
    assert b["depends_on"].isna().all()


def test_synth_to_text_says_what_the_layout_drops_and_parquet_keeps_it(tmp_path, capsys):
    assert main(["sim", "synth", "ls6", "--seed", "1", "--days", "3", "--start", "2023-01-01",
                 "--out", str(tmp_path / "t.log")]) == 0
    out = capsys.readouterr().out
    assert "no field for depends_on" in out and "--out FILE.parquet" in out
    assert main(["sim", "synth", "ls6", "--seed", "1", "--days", "3", "--start", "2023-01-01",
                 "--out", str(tmp_path / "t.parquet")]) == 0
    assert "note:" not in capsys.readouterr().out
    assert pd.read_parquet(tmp_path / "t.parquet")["depends_on"].notna().any()
