"""Paths the tests share (a plain module: several test folders have a conftest.py)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SHARED_TRACES = REPO.parent / "shared" / "traces"
LS6 = SHARED_TRACES / "ls6-a100.log"


def shipped_config(path) -> dict:
    """A shipped config (config/*.yaml) as Snakemake merges it: over the defaults and, for an
    overlay (its `run` names another shipped config, e.g. config/ls6-curves.yaml over
    ls6-real.yaml), over that config too; validated."""
    from mirage.config import load_shipped

    return load_shipped(path)
