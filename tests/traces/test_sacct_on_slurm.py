"""Real accounting data through the trace layer: jobs that are held and released, start later
(--begin), wait for each other (dependencies), fail, or never start; `sacct --parsable2` with
Eligible; `mirage trace clean` keeps what Slurm recorded, to the second."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pandas as pd

FIELDS = ("JobID,JobIDRaw,JobName,User,Submit,Eligible,Start,End,TimelimitRaw,NNodes,"
          "ExitCode,Priority,State")


def _wait_done(cluster, ids, timeout=180):
    end = time.monotonic() + timeout
    while True:
        rows = {r["JobID"]: r["State"] for r in cluster.sacct("-j", ",".join(map(str, ids)))}
        done = [j for j in ids if rows.get(str(j), "PENDING") not in ("PENDING", "RUNNING", "REQUEUED")]
        if len(done) == len(ids):
            return rows
        if time.monotonic() > end:
            raise AssertionError(f"jobs not finished after {timeout} s: {rows}")
        time.sleep(1)


def test_sacct_dump_reads_as_slurm_recorded(slurm_cluster, tmp_path):
    c = slurm_cluster
    out = f"--output={tmp_path}/%j.out"
    held = c.sbatch(out, "--hold", "--time=2", "-J", "held", "--wrap", "sleep 2")
    begin = c.sbatch(out, "--begin=now+15", "--time=3", "-J", "begin", "--wrap", "sleep 1")
    first = c.sbatch(out, "--time=5", "-J", "chain-1", "--wrap", "sleep 4")
    second = c.sbatch(out, f"--dependency=afterok:{first}", "--time=7", "-J", "chain-2", "--wrap", "sleep 3")
    third = c.sbatch(out, f"--dependency=afterany:{second}", "--time=90", "-J", "chain-3", "--wrap", "sleep 1")
    failing = c.sbatch(out, "--time=1", "-J", "fails", "--wrap", "sleep 1; exit 3")
    never = c.sbatch(out, "--hold", "--time=1", "-J", "never", "--wrap", "true")
    time.sleep(5)
    c.run("scontrol", "release", str(held))
    c.run("scancel", str(never))
    ids = [held, begin, first, second, third, failing, never]
    states = _wait_done(c, ids)
    assert states[str(failing)] == "FAILED" and states[str(never)] == "CANCELLED by 0"

    # the dump a user would take: every row, steps included, as sacct writes it
    dump = tmp_path / "sacct.txt"
    res = c.run("sacct", "-a", "--parsable2", "-o", FIELDS, "-j", ",".join(map(str, ids)))
    dump.write_text(res.stdout)
    clean = subprocess.run([sys.executable, "-m", "mirage", "trace", "clean", str(dump), "--cluster", "live",
                            "--out", str(tmp_path / "clean.parquet"), "--quarantine", str(tmp_path / "q.csv"),
                            "--report", str(tmp_path / "report.json")], capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    jobs = pd.read_parquet(tmp_path / "clean.parquet").set_index("job_id")
    quarantine = pd.read_csv(tmp_path / "q.csv")

    # every data row kept or quarantined; steps as steps, the cancelled pending job as never started
    lines = res.stdout.splitlines()
    assert report["rows_in"] == len(lines) - 1 == report["rows_kept"] + sum(report["quarantined"].values())
    steps = [ln for ln in lines[1:] if "." in ln.split("|")[0]]
    assert steps, "sacct listed no step rows"
    assert report["quarantined"].get("job_step") == len(steps)
    assert set(quarantine.loc[quarantine["reason"] == "job_step", "raw"]) == set(steps)
    assert report["quarantined"].get("never_started") == 1
    assert sorted(jobs.index) == sorted(str(j) for j in ids if j != never)

    # what Slurm recorded, field by field
    recorded = {r["JobID"]: r for r in c.sacct("-j", ",".join(map(str, ids)), fields=FIELDS)}
    for job_id, row in jobs.iterrows():
        rec = recorded[job_id]
        for col, field in (("submit", "Submit"), ("eligible", "Eligible"), ("start", "Start"), ("end", "End")):
            assert row[col] == pd.Timestamp(rec[field]), (job_id, col, row[col], rec[field])
        assert row["time_limit_min"] == int(rec["TimelimitRaw"])
        assert row["nodes"] == int(rec["NNodes"]) == 1
        assert row["exit_code"] == rec["ExitCode"] and row["state"] == rec["State"].split()[0]
        assert row["name"] == rec["JobName"] and row["user"] == rec["User"] == "root"
        assert row["priority"] == int(rec["Priority"])
        assert row["submit"] <= row["eligible"] <= row["start"] <= row["end"]
        assert row["end"] - row["start"] <= pd.Timedelta(minutes=int(row["time_limit_min"]))
    assert jobs.loc[str(failing), "exit_code"] == "3:0"
    assert (jobs["time_limit_min"].loc[[str(j) for j in (held, begin, first, second, third)]]
            .tolist() == [2, 3, 5, 7, 90])
    # the semantics Eligible carries: later than submit for the held, --begin and dependent jobs
    lag = (jobs["eligible"] - jobs["submit"]).dt.total_seconds()
    assert lag[str(held)] >= 4 and lag[str(begin)] >= 14
    assert jobs.loc[str(second), "eligible"] >= jobs.loc[str(first), "end"]
    assert jobs.loc[str(third), "eligible"] >= jobs.loc[str(second), "end"]
    assert lag[str(first)] <= 1
