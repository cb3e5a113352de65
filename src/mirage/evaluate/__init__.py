"""Table-based evaluation of provisioning policies (see docs/policies.md)."""

from mirage.evaluate.metrics import (
    LOAD_LEVELS, METRICS, evaluate, load_level, outcomes, reference_outcomes, summarize,
    to_markdown,
)

__all__ = ["LOAD_LEVELS", "METRICS", "evaluate", "load_level", "outcomes",
           "reference_outcomes", "summarize", "to_markdown"]
