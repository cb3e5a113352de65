"""Figures: each result a person would rather see than read, all drawn here and nowhere else.

The stages that compute write tables; ``mirage figures evaluation|fidelity|trace|training``
(``mirage.figures.cli``) draws from them, one look for all (``style``):

- ``evaluation``: x distributions, goal shares, cost against the oracle, interruption
  reduction, load-level trade-off, lead sweep (outcomes.parquet, evaluation.csv,
  lead_sweep.csv of ``mirage evaluate``);
- ``fidelity``: simulated vs real waits (fidelity.json and the leave-one-out points of
  ``mirage sim fidelity --points``);
- ``traces``: the trace at a glance (a clean table);
- ``training``: DQN and policy-gradient training curves (training.csv of ``mirage fit``).
"""
