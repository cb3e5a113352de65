"""The ``mirage`` command line: one subcommand per pipeline step, called by the workflow rules.

Bad input ends with one line ``mirage: error: ...`` naming the problem and the fix, and exit
status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from mirage.errors import MirageError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mirage", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _register_stages(sub)
    return parser


def _register_stages(sub) -> None:
    """Every stage registers its own commands (imports stay light: no torch here)."""
    from mirage import bench, config, notebooks, report
    from mirage.evaluate import claims, expected, rolling
    from mirage.evaluate import cli as evaluate_cli
    from mirage.figures import cli as figures_cli
    from mirage.live import cli as live_cli
    from mirage.policies import cli as policies_cli
    from mirage.samples import cli as samples_cli
    from mirage.samples import folds
    from mirage.sim import cli as sim_cli
    from mirage.traces import cli as traces_cli
    from mirage.twin import cli as twin_cli

    traces_cli.register(sub)
    config.register(sub)
    bench.register(sub)
    sim_cli.register(sub)
    samples_sub = samples_cli.register(sub)
    twin_cli.register(samples_sub)  # mirage samples twin
    folds.register(samples_sub)  # mirage samples fold
    rolling.register(sub)
    policies_cli.register(sub)
    evaluate_cli.register(sub)
    evaluate_cli.register_curves(sub)
    figures_cli.register(sub)
    expected.register(sub)
    claims.register(sub)
    report.register(sub)
    notebooks.register(sub)
    live_cli.register(sub)
    live_cli.register_provision(sub)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except MirageError as exc:
        print(f"mirage: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mirage: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
