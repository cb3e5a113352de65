from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SHARED_TRACES = REPO.parent / "shared" / "traces"
LS6 = SHARED_TRACES / "ls6-a100.log"


@pytest.fixture
def ls6_path() -> Path:
    if not LS6.exists():
        pytest.skip(f"real trace not available at {LS6}")
    return LS6
