"""The command line as a user meets it: real subprocesses, exit codes, no tracebacks."""

import json
import subprocess
import sys

from paths import DATA


def run(*args):
    return subprocess.run([sys.executable, "-m", "mirage", *args], capture_output=True, text=True)


def test_clean_writes_table_side_file_and_report(tmp_path):
    out, report, side = tmp_path / "c.parquet", tmp_path / "r.json", tmp_path / "q.csv"
    res = run("trace", "clean", str(DATA / "sacct_parsable2.txt"), "--cluster", "s",
              "--out", str(out), "--report", str(report), "--quarantine", str(side))
    assert res.returncode == 0, res.stderr
    data = json.loads(report.read_text())
    assert data["rows_in"] == data["rows_kept"] + sum(data["quarantined"].values())
    assert len(side.read_text().strip().splitlines()) == 1 + sum(data["quarantined"].values())
    assert "11 rows in, 5 kept, 6 quarantined" in res.stdout


def test_bad_input_gives_one_line_error(tmp_path):
    bad = tmp_path / "x.log"
    bad.write_bytes(b"\x00\x01\x02")
    res = run("trace", "clean", str(bad), "--cluster", "s", "--out", str(tmp_path / "o.parquet"),
              "--report", str(tmp_path / "r.json"))
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith("mirage: error: ") and str(bad) in res.stderr and "binary" in res.stderr
    assert not (tmp_path / "o.parquet").exists()


def test_detect():
    assert run("trace", "detect", str(DATA / "sample.swf")).stdout.strip() == "swf"
    assert run("trace", "detect", str(DATA / "tacc_fixed.log")).stdout.strip() == "tacc"


def test_summary_json_then_figures_trace(tmp_path):
    clean = tmp_path / "c.parquet"
    assert run("trace", "clean", str(DATA / "tacc_tab.log"), "--cluster", "t", "--out", str(clean),
               "--report", str(tmp_path / "r.json")).returncode == 0
    res = run("trace", "summary", str(clean), "--out", str(tmp_path / "p.json"), "--reference", str(clean))
    assert res.returncode == 0, res.stderr
    profile = json.loads((tmp_path / "p.json").read_text())
    assert profile["trace"]["jobs"] == 3 and profile["difference"]["jobs"]["abs"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.parquet", "c.quarantine.csv", "p.json", "r.json"]
    assert run("trace", "summary", str(clean), "--out", str(tmp_path / "q.json"), "--figure",
               str(tmp_path / "p.png")).returncode == 2  # figures: `mirage figures trace`
    # three jobs are enough for the overview
    res = run("figures", "trace", "--clean", str(clean), "--label", "t", "--out-dir", str(tmp_path / "f"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("trace_overview: ") and "Warning" not in res.stderr
    assert (tmp_path / "f" / "trace_overview.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "f" / "trace_overview.pdf").read_bytes()[:4] == b"%PDF"


def test_slurm_check_without_slurm_names_the_fix(tmp_path):
    # a machine with Python but no Slurm client commands on PATH
    res = subprocess.run([sys.executable, "-m", "mirage", "slurm", "check"], capture_output=True,
                         text=True, env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "FAIL client commands: sbatch, squeue, scancel, scontrol, sinfo not on PATH" in res.stdout
    assert "Fix:" in res.stdout and res.stderr.startswith("mirage: error: ")


def test_workflow_on_slurm_without_slurm_stops_before_it_submits(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "which", "env"):  # a machine without Slurm, not without a shell
        (bin_dir / tool).symlink_to(f"/usr/bin/{tool}")
    from paths import REPO

    res = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                          "-d", str(tmp_path / "w"), "--workflow-profile", str(REPO / "profiles" / "slurm"),
                          "--configfile", str(REPO / "config" / "tiny.yaml")],
                         capture_output=True, text=True, env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
                         timeout=300)
    text = res.stdout + res.stderr
    assert res.returncode != 0
    assert "nothing was submitted" in text and "sbatch" in text and "Fix:" in text, text[-3000:]
