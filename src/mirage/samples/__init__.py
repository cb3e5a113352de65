"""Provisioning samples: every decision point of a predecessor's life, with its outcome."""
