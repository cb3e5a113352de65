"""One look for every figure: seaborn's "paper" context on "ticks", sized for a paper column.

``use_style()`` is a context manager: figures drawn inside it get the fonts, line widths and
grid of the house style, and the warnings that seaborn and matplotlib raise about each other's
deprecations stay inside it (``@styled`` runs a figure-building function inside it).
``policy_style(name)`` gives a policy the same colour, line style and marker in every figure;
``save(fig, stem)`` writes ``stem.png`` and ``stem.pdf``.
"""

from __future__ import annotations

import functools
import re
import warnings
import zlib
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")  # workflow and CI nodes have no display
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from mirage.policies.catalogue import BASELINE, CATALOGUE, LEARNED, ORACLE  # noqa: E402

#: widths of a single and a double column of a two-column paper, inches
COLUMN_W = 3.5
DOUBLE_W = 7.0
PNG_DPI = 200
NAME = re.compile(r"[a-z0-9_]+")

# legible at print size: 7-8.5 pt text on a 3.5 in column
_RC = {
    "font.size": 8.0, "axes.titlesize": 8.5, "axes.labelsize": 8.0,
    "xtick.labelsize": 7.0, "ytick.labelsize": 7.0,
    "legend.fontsize": 7.0, "legend.title_fontsize": 7.5, "figure.titlesize": 9.0,
    "legend.frameon": False, "axes.grid": True, "grid.linewidth": 0.4, "grid.alpha": 0.5,
    "axes.spines.top": False, "axes.spines.right": False,
    "figure.constrained_layout.use": True, "figure.dpi": 100,
    "savefig.dpi": PNG_DPI, "pdf.fonttype": 42, "ps.fonttype": 42,
    "image.cmap": "viridis",
}

# a policy's colour and role come from the policy catalogue (light: no policy code is loaded):
# a learned policy and its threshold-tuned twin share a hue (the twin lighter and dashed), the
# baselines are drawn dash-dotted with square markers, the oracle black with a star.
# Names outside the catalogue (a policy not registered, "early" in a test): a colour chosen by
# the name alone, so it is the same in every figure and every run
_SPARE = sns.color_palette("husl", 12).as_hex()

# splits, simulator predictors and the like: fixed roles, fixed colours
ROLE_COLORS = {
    "real": "#000000", "sim": "#1f77b4", "compat": "#d62728", "zero_wait": "#7f7f7f",
    "cost": "#000000", "interruption": "#d62728", "overlap": "#1f77b4",
}


def policy_color(name: str) -> str:
    entry = CATALOGUE.get(name)
    if entry is not None and entry.colour is not None:
        return entry.colour
    return _SPARE[zlib.crc32(name.encode()) % len(_SPARE)]


def policy_style(name: str) -> dict:
    """Colour, line style, line width and marker of a policy, the same in every figure."""
    entry = CATALOGUE.get(name)
    role = entry.role if entry is not None else LEARNED
    if role == ORACLE:
        return {"color": policy_color(name), "ls": "-", "lw": 1.0, "marker": "*"}
    if role == BASELINE:
        return {"color": policy_color(name), "ls": (0, (5, 1.5, 1, 1.5)), "lw": 1.1,
                "marker": "s"}
    tuned = entry.tunes is not None if entry is not None else name.endswith("_tuned")
    return {"color": policy_color(name), "ls": (0, (3.5, 1.5)) if tuned else "-", "lw": 1.3,
            "marker": "D" if tuned else "o"}


def policy_order(names) -> list[str]:
    """Distinct names in their first order of appearance (the evaluation's order)."""
    return list(dict.fromkeys(str(n) for n in names))


def slug(text) -> str:
    """``text`` as a figure-name part: lower case, runs of other characters as one ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_") or "x"


@contextmanager
def use_style():
    """The house style, and the two libraries' deprecation chatter kept inside it."""
    rc = {**sns.axes_style("ticks"), **sns.plotting_context("paper"), **_RC}
    with matplotlib.rc_context(rc), warnings.catch_warnings():
        for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning,
                         matplotlib.MatplotlibDeprecationWarning):
            warnings.simplefilter("ignore", category)
        yield


def styled(draw):
    """Decorator: ``draw`` builds its figures inside use_style()."""
    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with use_style():
            return draw(*args, **kwargs)
    return wrapper


def save(fig, path_stem) -> tuple[Path, Path]:
    """Write ``fig`` as ``<stem>.png`` (PNG_DPI) and ``<stem>.pdf``, close it, return both.

    Saving is drawing (tick labels are made then), so it too runs inside use_style()."""
    stem = Path(path_stem)
    if stem.suffix in (".png", ".pdf"):
        stem = stem.with_suffix("")
    if not NAME.fullmatch(stem.name):
        raise ValueError(f"figure name {stem.name!r} must match {NAME.pattern}")
    stem.parent.mkdir(parents=True, exist_ok=True)
    png, pdf = stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".pdf")
    try:
        with use_style():
            fig.savefig(png, dpi=PNG_DPI, metadata={"Software": None})
            fig.set_layout_engine("none")  # laid out for the PNG; the PDF keeps that layout
            fig.savefig(pdf, metadata={"CreationDate": None, "Creator": None, "Producer": None})
    finally:
        plt.close(fig)
    return png, pdf


def legend_below(fig, axes, ncols: int = 5, **kw):
    """One legend for the figure under its panels: every label once, first-seen order."""
    handles = {}
    for ax in (axes.flat if hasattr(axes, "flat") else axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside lower center",
                   ncols=min(ncols, len(handles)), **kw)
    return handles


def date_axis(ax, days: float) -> None:
    """Dates on the x axis of a series ``days`` long: about six ticks, day and month."""
    import matplotlib.dates as mdates

    if days <= 120:
        loc, fmt = mdates.DayLocator(interval=max(1, int(np.ceil(days / 6)))), "%d %b"
    else:
        loc, fmt = mdates.MonthLocator(interval=max(1, int(np.ceil(days / 30 / 6)))), "%b %Y"
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt))


def log_axis(ax, which: str = "x") -> None:
    """A log scale labelled 0.1, 1, 10 (not 10^-1, 10^0, 10^1), minor ticks unlabelled."""
    getattr(ax, f"set_{which}scale")("log")
    plain_ticks(getattr(ax, f"{which}axis"))


def plain_ticks(axis) -> None:
    """Tick labels as plain numbers (0.1, 1, 10) on a log or symlog axis, minor ones unlabelled."""
    import matplotlib.ticker as ticker

    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())
