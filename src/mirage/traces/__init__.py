"""Trace layer: read any supported source into the canonical job table, clean, split."""
