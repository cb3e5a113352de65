"""Benchmarks: ``mirage bench ...``, every one here. A benchmark is no test: it measures and
prints (some also write JSON, CSV or a figure) and asserts nothing.

- ``sim`` (:mod:`.sim`): the simulator's speed (replay, what-if, predecessor sweep);
- ``samples`` (:mod:`.samples`): all samples of a trace and the RL training on them, timed;
  ``twin``, ``twin-runtimes``, ``twin-arrivals`` (:mod:`.twin`): the twin policy, its
  runtime model and what foresees the arrivals, on a finished run's validation window;
- ``fit`` (:mod:`.fit`): the workflow's fits of a config's policies, timed;
- ``workflow`` (:mod:`.workflow`): where a workflow run spent its time (benchmark files);
- ``slurm-sim`` (:mod:`.slurm_sim`): the simulator against a live slurmctld, job by job;
- ``crosscheck`` (:mod:`.crosscheck`): this project's reinforcement learning against
  Stable-Baselines3 on the same environment, budgets and seeds.

This stage sits on top (it may import every stage below it; only ``mirage.cli`` imports it);
each module registers its own subcommands (``register_bench``) and imports the heavy code
inside its handler.
"""

from __future__ import annotations


def register(sub) -> None:
    """Add ``mirage bench`` and its subcommands."""
    from mirage.bench import crosscheck, fit, samples, sim, slurm_sim, twin, workflow

    bench = sub.add_parser("bench", help="benchmarks that print figures")
    bsub = bench.add_subparsers(dest="bench_command", required=True)
    sim.register_bench(bsub)
    samples.register_bench(bsub)
    twin.register_twin_bench(bsub)
    for module in (workflow, slurm_sim, fit, crosscheck):
        module.register_bench(bsub)
