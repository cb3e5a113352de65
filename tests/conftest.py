import fcntl
import os

import pytest
from paths import LS6
from runs import run_tiny
from slurm_cluster import mark_slurm_tests, slurm_cluster, xdist_scheduler  # noqa: F401 (the session fixture)


def pytest_collection_modifyitems(items):
    mark_slurm_tests(items)
    # the live cluster's tests that read the tiny run go last on their worker: by then the
    # other worker has usually built it, where they would otherwise wait for it (~1.5 min)
    items.sort(key=lambda item: item.get_closest_marker("slurm") is not None
               and "tiny_run" in getattr(item, "fixturenames", ()))


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


# ------------------------------------------------------------------ the simulator's tests
@pytest.fixture(scope="session")
def real_table():
    """The real ls6 trace as the simulator's job table (skips where it is absent)."""
    if not LS6.is_file():
        pytest.skip(f"real trace not available at {LS6}")
    from mirage.sim.io import load_table

    return load_table(LS6, "ls6")


# ------------------------------------------------------------------ the policies' tests
@pytest.fixture(scope="session")
def synth():
    """The synthetic sample set with a known signal every learned policy is tested on."""
    from mirage.policies.synthetic import make_synthetic

    return make_synthetic(n_train=40, n_val=20, seed=0).validate()


@pytest.fixture(scope="session")
def train(synth):
    return synth.split("train")


@pytest.fixture(scope="session")
def validation(synth):
    return synth.split("validation")


@pytest.fixture(scope="session")
def fitted(train):
    """Every registered policy fitted on ``train`` at the tests' small budgets."""
    from mirage.policies import make_policy
    from policy_budgets import BUDGETS, FITTED

    pols = {name: make_policy(name, **BUDGETS.get(name, {})).fit(train, seed=0) for name in FITTED}
    pols["rf_history"] = make_policy("rf", features="history", points_per_sample=7,
                                     model_params={"n_estimators": 30}).fit(train, seed=0)
    return pols
