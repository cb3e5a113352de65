import pytest

from mirage.policies import make_policy
from mirage.policies.synthetic import make_synthetic

# Training budgets cut to what this small scenario needs, so the whole suite stays ~1 min on
# 2 shared cores; the defaults are sized for ~700 samples x ~300 points.
FAST = {
    "xgb": {"model_params": {"n_estimators": 100}},
    "xgb_tuned": {"model_params": {"n_estimators": 100}},
    "rf": {"model_params": {"n_estimators": 50}},
    "rf_tuned": {"model_params": {"n_estimators": 50}},
    "dqn": {"total_timesteps": 40_000, "learning_starts": 2_000},
    "pg": {"updates": 150},
}
LEARNED = ["fixed_lead", "quantile", "rf", "rf_tuned", "xgb", "xgb_tuned", "dqn", "pg"]


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
    for name in ["reactive", "average", "oracle"] + LEARNED:
        pols[name] = make_policy(name, **FAST.get(name, {})).fit(train, seed=0)
    pols["rf_history"] = make_policy("rf", features="history", points_per_sample=7,
                                     model_params={"n_estimators": 30}).fit(train, seed=0)
    return pols
