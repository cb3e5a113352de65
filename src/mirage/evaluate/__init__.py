"""Table-based evaluation of provisioning policies (see docs/policies.md).

Names resolve lazily so that `mirage --help` does not import the policies' libraries.
"""

import importlib

__all__ = ["LOAD_LEVELS", "METRICS", "evaluate", "level_tradeoff", "load_level", "outcomes",
           "reference_outcomes", "summarize", "to_markdown"]


def __getattr__(name):
    if name in __all__:
        return getattr(importlib.import_module("mirage.evaluate.metrics"), name)
    raise AttributeError(f"module 'mirage.evaluate' has no attribute {name!r}")
