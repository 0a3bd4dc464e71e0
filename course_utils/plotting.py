"""One look for every figure: a title, labelled axes with units, a legend when there are series."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

STYLE = {
    "figure.figsize": (7.0, 4.0),
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
}


def new_figure(title: str, xlabel: str, ylabel: str, *, ncols: int = 1, figsize: tuple[float, float] | None = None) -> tuple[Figure, Axes]:
    """A figure with one axes (or ``ncols`` side by side, sharing labels) already titled and labelled.

    Labels should carry units, e.g. ``"matrix size n (n x n)"`` / ``"time (ms)"``.
    """
    if not (title and xlabel and ylabel):
        raise ValueError("every course figure needs a title and both axis labels (with units)")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, ncols, figsize=figsize or (STYLE["figure.figsize"][0] * (1 if ncols == 1 else 0.75 * ncols), 4.0))
    for ax in (axes if ncols > 1 else [axes]):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    if ncols == 1:
        axes.set_title(title)
    else:
        fig.suptitle(title)
    return fig, axes


def _retina() -> None:
    """In a notebook, store figures as PNGs of twice the pixels, shown at their usual size: crisp on a
    HiDPI screen, and sharp when a deck scales a figure up to fill a slide (tools/slides.py)."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # no IPython: plain matplotlib, nothing to set
        return
    if get_ipython() is not None and "inline" in plt.get_backend():
        set_matplotlib_formats("retina")


def finish(fig: Figure, path: str | Path | None = None) -> None:
    """Add legends where series are labelled, tighten, save a PNG if ``path`` is given, show.

    Ending a cell with this (not a bare ``plt.plot``) keeps stray reprs out of the output.
    """
    for ax in fig.axes:
        handles, labels = ax.get_legend_handles_labels()
        if any(label and not label.startswith("_") for label in labels):
            ax.legend()
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png", bbox_inches="tight")
    _retina()
    plt.show()  # returns None, so the cell prints no Figure repr
