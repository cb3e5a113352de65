import fcntl
import os

import pytest
from paths import LS6
from runs import run_tiny
from slurm_cluster import mark_slurm_tests, slurm_cluster, xdist_scheduler  # noqa: F401 (the session fixture)


def pytest_collection_modifyitems(items):
    mark_slurm_tests(items)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist
def pytest_xdist_make_scheduler(config, log):
    return xdist_scheduler(config, log)


@pytest.fixture
def ls6_path():
    if not LS6.exists():
        pytest.skip(f"real trace not available at {LS6}")
    return LS6


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The tiny config's whole DAG run once locally; the tests that read it must not write to it.

    Once per test session, not per pytest-xdist worker: the first worker to ask runs it in the
    directory all workers share, under a lock; the others wait for it and read it."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # basetemp/popen-gwN -> basetemp, the same for every worker
    root = shared / "tiny-run"
    root.mkdir(exist_ok=True)
    work, done = root / "local", root / "done"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            run_tiny(work)
            done.touch()
    return work
