import pytest
from paths import LS6
from runs import run_tiny
from slurm_cluster import mark_slurm_tests, slurm_cluster  # noqa: F401 (the session fixture)


def pytest_collection_modifyitems(items):
    mark_slurm_tests(items)


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
