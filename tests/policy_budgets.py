"""Training budgets the policy tests share (a plain module, importable from tests), and the
lists of policies they test, read from the policy catalogue: a policy without a budget here is
tested at its defaults."""

from mirage.policies.catalogue import BATCH, CATALOGUE, LEARNED as LEARNS, RULE, TORCH

# Training budgets cut to what this small scenario needs, so the whole suite stays ~1 min on
# 2 shared cores; the defaults are sized for ~700 samples x ~300 points.
FAST = {
    "xgb": {"model_params": {"n_estimators": 100}},
    "xgb_tuned": {"model_params": {"n_estimators": 100}},
    "rf": {"model_params": {"n_estimators": 50}},
    "rf_tuned": {"model_params": {"n_estimators": 50}},
    "dqn": {"total_timesteps": 40_000, "learning_starts": 2_000},
    "pg": {"updates": 150},
    "ppo": {"total_timesteps": 60_000},
    # cross-fitted: one fit per time block plus the final one
    "dqn_tuned": {"total_timesteps": 20_000, "learning_starts": 2_000, "n_blocks": 2},
    "pg_tuned": {"updates": 100, "n_blocks": 2},
    "ppo_tuned": {"total_timesteps": 40_000, "n_blocks": 2},
    "service_level": {"taus": (0.667, 0.9, 0.975), "n_blocks": 2, "min_level_samples": 5},
}

# the history models (mirage.policies.sequence) at sizes that only exercise the plumbing: the
# tests of what they learn are in tests/policies/test_sequence.py
SEQUENCE = {
    "transformer": {"width": 8, "epochs": 2},
    "transformer_tuned": {"width": 8, "epochs": 2, "n_blocks": 2},
    "moe": {"width": 8, "epochs": 2, "experts": 2},
    "moe_tuned": {"width": 8, "epochs": 2, "experts": 2, "n_blocks": 2},
    "pg_transformer": {"width": 8, "epochs": 2, "updates": 2},
}

#: what the tests fit: every policy that `mirage fit` fits, at the budgets above
BUDGETS = {**FAST, **SEQUENCE}
FITTED = list(CATALOGUE.fitted())
#: the policies on the compact features that learn from the samples, each tested to beat
#: reactive: the learned ones and fixed_lead (the baseline that learns its lead); the history
#: models' tests of what they learn are in tests/policies/test_sequence.py
LEARNED = ["fixed_lead"] + [e.name for e in CATALOGUE
                            if e.role == LEARNS and e.kind in (RULE, BATCH, TORCH)]
