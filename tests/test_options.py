"""A config key keeps its name on the command line and in the parsed arguments."""

import argparse
from pathlib import Path

import yaml

from mirage import options, units

DEFAULTS = Path(__file__).resolve().parents[1] / "config" / "defaults.yaml"


def parse(add, argv, **kw):
    p = argparse.ArgumentParser()
    add(p, **kw)
    return p.parse_args(argv)


def test_cost_options_carry_the_config_keys_names():
    costs = yaml.safe_load(DEFAULTS.read_text())["policies"]["costs"]
    args = parse(options.add_costs, [])
    assert vars(args) == costs  # the same names and the same defaults as the config
    args = parse(options.add_costs, ["--c-I", "2", "--c-O", "0.25"])
    assert (args.c_I, args.c_O) == (2.0, 0.25)


def test_evaluation_options_carry_the_config_keys_names():
    config = yaml.safe_load(DEFAULTS.read_text())
    evaluation, every = config["evaluation"], config["samples"]["every_hours"]
    args = parse(options.add_equivalence, [], default=evaluation["equivalence_h"])
    assert vars(args) == {"equivalence_h": evaluation["equivalence_h"]}
    args = parse(options.add_blocks, [], default=evaluation["block_hours"])
    assert vars(args) == {"block_hours": evaluation["block_hours"], "every_hours": every}
    args = parse(options.add_blocks, ["--block-hours", "0", "--every-hours", "2"], default=48)
    assert (args.block_hours, args.every_hours) == (0.0, 2.0)


def test_chain_nodes_one_or_many_required_unless_defaulted():
    assert parse(options.add_chain_nodes, ["--chain-nodes", "8"]).chain_nodes == 8
    assert parse(options.add_chain_nodes, ["--chain-nodes", "1", "8"], many=True).chain_nodes == [1, 8]
    assert parse(options.add_chain_nodes, [], many=True, default=[1, 8]).chain_nodes == [1, 8]
    p = argparse.ArgumentParser(exit_on_error=False)
    options.add_chain_nodes(p)
    try:
        p.parse_args([])
    except (SystemExit, argparse.ArgumentError):
        pass
    else:
        raise AssertionError("--chain-nodes without a default must be required")


def test_seed_required_or_defaulted():
    assert parse(options.add_seed, ["--seed", "7"], required=True).seed == 7
    assert parse(options.add_seed, []).seed == 0


def test_units_agree():
    assert units.HOUR_S == 3600 and units.DAY_S == 24 * units.HOUR_S
    assert units.WEEK_S == 7 * units.DAY_S
    assert units.DAY_S // units.DECISION_STEP_S == 144  # the history window's steps
