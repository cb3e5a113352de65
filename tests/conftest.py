import pytest
from paths import LS6
from runs import run_tiny


@pytest.fixture
def ls6_path():
    if not LS6.exists():
        pytest.skip(f"real trace not available at {LS6}")
    return LS6


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The tiny config's whole DAG run once locally; the tests that read it must not write to it."""
    work = tmp_path_factory.mktemp("tiny") / "local"
    run_tiny(work)
    return work
