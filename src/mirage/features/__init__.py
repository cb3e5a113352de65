"""Features of the cluster state at a decision point: the reference's 42-number state history and
a compact engineered set."""
