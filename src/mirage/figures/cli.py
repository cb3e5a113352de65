"""``mirage figures evaluation|fidelity|trace|training|curves``: every figure, drawn from the tables the
other stages wrote (a figure can be redrawn without re-running what it shows).

Each command reads the tables, has the stage that owns a computation derive what a figure
draws from them (the headline's points and the load-level trade-off: mirage.evaluate; the
trace's overview: mirage.traces.summary), and hands the frames to the drawing modules of this
package (evaluation, fidelity, traces, training), which only draw.

Each command creates ``--out-dir``, writes there only, one ``NAME.png`` and ``NAME.pdf`` per
figure (NAME matches ``[a-z0-9_]+``), and prints one line per figure; a figure without data
is left out with a printed ``note:`` line, never an error.
"""

from __future__ import annotations

import json
from pathlib import Path

from mirage import options
from mirage.errors import MirageError


def _read(path, kind: str):
    """A table (.parquet or .csv) or a JSON report, or one error line naming the file."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise MirageError(f"{path}: no such file; it is the {kind}. Fix: run the stage that "
                          "writes it, or pass its path")
    try:
        if path.suffix == ".json":
            return json.loads(path.read_text())
        return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise MirageError(f"{path}: cannot read the {kind}: {exc}") from None


def write_all(items, out_dir) -> list[Path]:
    """Save every ``(name, figure, note)`` of ``items`` into ``out_dir`` (created), printing
    one line per figure and per note; returns the PNG paths."""
    from mirage.figures.style import save

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig, note in items:
        if fig is None:
            print(f"note: {name} skipped: {note}")
            continue
        png, pdf = save(fig, out_dir / name)
        print(f"{name}: {png} {pdf}")
        written.append(png)
    return written


def evaluation_figures(outcomes, table, sweep=None, label: str = "", seeds=None, block: int = 1):
    """Every evaluation figure of mirage.figures.evaluation.evaluation_figures, with the frames
    the evaluation computes from ``outcomes`` (outcomes.parquet) and ``table``
    (evaluation.csv); ``block``: the headline's bootstrap blocks (headline_points)."""
    from mirage.evaluate.headline import headline_points
    from mirage.evaluate.metrics import BASELINES, level_tradeoff
    from mirage.figures import evaluation

    return evaluation.evaluation_figures(
        outcomes, table, headline=headline_points(outcomes, block=block),
        tradeoff=level_tradeoff(table, BASELINES), baselines=BASELINES, sweep=sweep,
        label=label, seeds=seeds)


def _evaluation(args) -> None:
    outcomes = _read(args.outcomes, "outcomes table of mirage evaluate")
    table = _read(args.evaluation, "evaluation table of mirage evaluate")
    sweep = _read(args.lead_sweep, "lead-sweep table of mirage evaluate") if args.lead_sweep else None
    seeds = _read(args.seeds, "training-seed table of mirage evaluate") if args.seeds else None
    from mirage.evaluate.metrics import block_length

    block = block_length(args.block_hours, args.every_hours)
    write_all(evaluation_figures(outcomes, table, sweep, label=args.label, seeds=seeds,
                                 block=block), args.out_dir)


def _fidelity(args) -> None:
    from mirage.figures.fidelity import fidelity_figures

    report = _read(args.report, "fidelity report of mirage sim fidelity")
    points = (_read(args.points, "leave-one-out points of mirage sim fidelity --points")
              if args.points else None)
    write_all(fidelity_figures(report, points, label=args.label), args.out_dir)


def _trace(args) -> None:
    from mirage.figures.traces import trace_figures
    from mirage.traces.summary import overview

    traces = [(args.label, overview(_read(args.clean, "clean trace")))]
    if args.reference:
        traces.append((args.reference_label, overview(_read(args.reference, "reference trace"))))
    figs = trace_figures(traces)
    write_all(((name, fig, "") for name, fig in figs.items()), args.out_dir)


def _training(args) -> None:
    from mirage.figures.training import read_histories, training_figures

    histories, notes = read_histories(args.models)
    for note in notes:
        print(f"note: {note}")
    write_all(training_figures(histories, label=args.label), args.out_dir)


def _curves(args) -> None:
    import pandas as pd

    from mirage.evaluate.curves import drawn
    from mirage.figures.curves import CURVE_FILE, curve_figures

    frames = [_read(Path(d) / CURVE_FILE, "learning curve of mirage curves").assign(mode=mode)
              for mode, d in args.curves]
    means, flats = drawn(pd.concat(frames, ignore_index=True))
    write_all(curve_figures(means, flats, label=args.label), args.out_dir)


def register(sub) -> None:
    fig = sub.add_parser("figures", help="draw the figures from the tables other stages wrote")
    fsub = fig.add_subparsers(dest="figures_command", required=True)

    def command(name, help, func):
        p = fsub.add_parser(name, help=help)
        p.add_argument("--label", default="", help="the cluster's name in titles")
        p.add_argument("--out-dir", required=True, help="NAME.png and NAME.pdf per figure")
        p.set_defaults(func=func)
        return p

    p = command("evaluation", "x distributions, goal shares, costs, trade-offs, lead sweeps",
                _evaluation)
    p.add_argument("--outcomes", required=True, help="outcomes.parquet of mirage evaluate")
    p.add_argument("--evaluation", required=True, help="evaluation.csv of mirage evaluate")
    p.add_argument("--lead-sweep", help="lead_sweep.csv of mirage evaluate")
    p.add_argument("--seeds", help="seeds.csv of mirage evaluate (spread over training seeds)")
    from mirage.evaluate.metrics import BLOCK_HOURS

    options.add_blocks(p, BLOCK_HOURS)

    p = command("fidelity", "simulated vs real waits: daily means and leave-one-out", _fidelity)
    p.add_argument("--report", required=True, help="fidelity.json of mirage sim fidelity")
    p.add_argument("--points", help="the .parquet of mirage sim fidelity --points")

    p = command("trace", "the trace at a glance", _trace)
    p.add_argument("--clean", required=True, help="clean canonical table (.parquet)")
    p.add_argument("--reference", help="another clean table drawn on the same axes")
    p.add_argument("--reference-label", default="reference")

    p = command("curves", "learning curves: held-out cost against environment steps", _curves)
    p.add_argument("--curves", nargs=2, action="append", required=True, metavar=("MODE", "DIR"),
                   help="simulator mode and a directory of mirage curves (repeatable)")

    p = command("training", "training curves of the DQN and policy-gradient fits", _training)
    p.add_argument("--models", nargs=2, action="append", required=True, metavar=("MODE", "DIR"),
                   help="simulator mode and its models directory (repeatable); reads "
                        "DIR/n*/dqn*/training.csv and DIR/n*/pg*/training.csv")
