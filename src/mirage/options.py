"""Command-line options that several ``mirage`` subcommands share, declared once.

Each option keeps the name of the config key it carries: ``policies.costs.c_I`` is ``--c-I``
and ``args.c_I``; ``samples.chain_nodes`` is ``--chain-nodes`` and ``args.chain_nodes``;
``seed`` is ``--seed`` and ``args.seed``.
"""

from __future__ import annotations

import argparse
import json

from mirage.errors import MirageError


def add_seed(p: argparse.ArgumentParser, help: str = "the config's seed", *,
             required: bool = False, default: int = 0) -> None:
    """``--seed``: the config's ``seed`` (or what the subcommand seeds with it)."""
    if required:
        p.add_argument("--seed", type=int, required=True, help=help)
    else:
        p.add_argument("--seed", type=int, default=default, help=f"{help} (default {default})")


def add_chain_nodes(p: argparse.ArgumentParser, *, many: bool = False,
                    default: int | list[int] | None = None) -> None:
    """``--chain-nodes``: the nodes of every job of the chain (``samples.chain_nodes``); ``many``:
    one or more sizes. Required unless a ``default`` is given."""
    kwargs = dict(type=int, help="nodes of every job of the chain (samples.chain_nodes)")
    if many:
        kwargs["nargs"] = "+"
    if default is None:
        kwargs["required"] = True
    else:
        kwargs["default"] = default
    p.add_argument("--chain-nodes", **kwargs)


def add_costs(p: argparse.ArgumentParser) -> None:
    """``--c-I`` and ``--c-O``: the cost of an hour of interruption and of overlap
    (``policies.costs``)."""
    p.add_argument("--c-I", dest="c_I", type=float, default=1.0,
                   help="cost of an hour of interruption (policies.costs.c_I; default 1)")
    p.add_argument("--c-O", dest="c_O", type=float, default=0.5,
                   help="cost of an hour of overlap (policies.costs.c_O; default 0.5)")


def add_equivalence(p: argparse.ArgumentParser, default: float) -> None:
    """``--equivalence-h``: the margin of the "equivalent" verdict (``evaluation.equivalence_h``;
    mirage.evaluate.metrics.verdict)."""
    p.add_argument("--equivalence-h", type=float, default=default,
                   help="a cost difference whose interval lies within +-this many hours per "
                   "handover is 'equivalent' (evaluation.equivalence_h; 0: no such verdict; "
                   f"default {default:g})")


def add_blocks(p: argparse.ArgumentParser, default: float) -> None:
    """``--block-hours`` and ``--every-hours``: the bootstrap's blocks of successive samples
    (``evaluation.block_hours``) and the spacing of sample starts (``samples.every_hours``);
    mirage.evaluate.metrics.block_length."""
    p.add_argument("--block-hours", type=float, default=default,
                   help="bootstrap intervals resample blocks of this many hours of successive "
                   "samples (evaluation.block_hours; 0: one sample at a time; default "
                   f"{default:g})")
    p.add_argument("--every-hours", type=float, default=4.0,
                   help="hours between sample starts (samples.every_hours; default 4)")


def add_device(p: argparse.ArgumentParser) -> None:
    """``--device``: the torch device of the torch policies (``policies.device``)."""
    p.add_argument("--device", default="cpu",
                   help="torch device of the torch policies (policies.device; default cpu)")


def settings_arg(text: str | None, flag: str, example: str) -> dict:
    """The JSON map of policy name to settings given as ``flag`` (empty when not given)."""
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError as e:
        raise MirageError(f"{flag} {text!r}: not JSON ({e}). Fix: a map of policy name to "
                          f"settings, e.g. '{example}'") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise MirageError(f"{flag} {text!r}: not a map of policy name to settings. Fix: e.g. "
                          f"'{example}'")
    return value
