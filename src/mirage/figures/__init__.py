"""Figures: each result a person would rather see than read."""
