import pytest

from mirage.policies import make_policy
from mirage.policies.synthetic import make_synthetic
from policy_budgets import FAST, LEARNED

@pytest.fixture(scope="session")
def synth():
    return make_synthetic(n_train=40, n_val=20, seed=0).validate()


@pytest.fixture(scope="session")
def train(synth):
    return synth.split("train")


@pytest.fixture(scope="session")
def validation(synth):
    return synth.split("validation")


@pytest.fixture(scope="session")
def fitted(train):
    pols = {}
    for name in ["reactive", "average", "plan_lead", "oracle"] + LEARNED:
        pols[name] = make_policy(name, **FAST.get(name, {})).fit(train, seed=0)
    pols["rf_history"] = make_policy("rf", features="history", points_per_sample=7,
                                     model_params={"n_estimators": 30}).fit(train, seed=0)
    return pols
