"""Mirage: proactive provisioning of long-running services on batch GPU clusters."""

__version__ = "0.1.0"
