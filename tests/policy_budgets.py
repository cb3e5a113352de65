"""Training budgets the policy tests share (a plain module, importable from tests)."""

# Training budgets cut to what this small scenario needs, so the whole suite stays ~1 min on
# 2 shared cores; the defaults are sized for ~700 samples x ~300 points.
FAST = {
    "xgb": {"model_params": {"n_estimators": 100}},
    "xgb_tuned": {"model_params": {"n_estimators": 100}},
    "rf": {"model_params": {"n_estimators": 50}},
    "rf_tuned": {"model_params": {"n_estimators": 50}},
    "dqn": {"total_timesteps": 40_000, "learning_starts": 2_000},
    "pg": {"updates": 150},
    # cross-fitted: one fit per time block plus the final one
    "dqn_tuned": {"total_timesteps": 20_000, "learning_starts": 2_000, "n_blocks": 2},
    "pg_tuned": {"updates": 100, "n_blocks": 2},
    "service_level": {"taus": (0.667, 0.9, 0.975), "n_blocks": 2, "min_level_samples": 5},
}
LEARNED = ["fixed_lead", "quantile", "service_level", "rf", "rf_tuned", "xgb", "xgb_tuned", "dqn", "dqn_tuned",
           "pg", "pg_tuned"]

# the history models (mirage.policies.sequence) at sizes that only exercise the plumbing: the
# tests of what they learn are in tests/policies/test_sequence.py
SEQUENCE = {
    "transformer": {"width": 8, "epochs": 2},
    "transformer_tuned": {"width": 8, "epochs": 2, "n_blocks": 2},
    "moe": {"width": 8, "epochs": 2, "experts": 2},
    "moe_tuned": {"width": 8, "epochs": 2, "experts": 2, "n_blocks": 2},
    "pg_transformer": {"width": 8, "epochs": 2, "updates": 2},
}
