"""Workflow runs the tests share (a plain module, like paths.py)."""

import subprocess
import sys

from paths import REPO

SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TINY = REPO / "config" / "tiny.yaml"


def snakemake(*args, cwd=REPO, **kw):
    return subprocess.run([*SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, **kw)


def run_tiny(workdir, *args):
    """The whole DAG of the tiny config in `workdir`, locally on 2 cores (or as `args` say)."""
    res = snakemake("-s", str(REPO / "Snakefile"), "-d", str(workdir), "--cores", "2",
                    "--configfile", str(TINY), *args)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res


def copy_checkout(dest):
    """This checkout's tracked and untracked-but-not-ignored files (no results) copied to `dest`:
    a workflow to change without touching the real one."""
    import shutil

    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    for f in files:
        if (REPO / f).is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, dest / f)
    return dest
