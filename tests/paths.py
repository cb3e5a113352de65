"""Paths the tests share (a plain module: several test folders have a conftest.py)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SHARED_TRACES = REPO.parent / "shared" / "traces"
LS6 = SHARED_TRACES / "ls6-a100.log"
