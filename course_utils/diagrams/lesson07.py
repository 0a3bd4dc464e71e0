"""Lesson 07's picture: a naive save and an atomic save, step by step, and what a crash in the middle
of each leaves on disk.

Used by: notebook 07 (its deeper notebook kills a real writer mid-save and finds
exactly these files).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

GOOD, PARTIAL, TEMP, BAD = "#cfe8cf", "#fde2b8", "#dbe9f6", "#f4c2c2"


def _file(ax, x: float, y: float, text: str, color: str, w: float = 2.1, h: float = 0.75) -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.03", facecolor=color, edgecolor="black", lw=1))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=8)


def _arrow(ax, x0: float, x1: float, y: float, label: str) -> None:
    ax.add_patch(FancyArrowPatch((x0, y), (x1, y), arrowstyle="->", mutation_scale=12, lw=1.2))
    ax.text((x0 + x1) / 2, y + 0.12, label, ha="center", va="bottom", fontsize=7.5)


def atomic_save() -> Figure:
    """Two rows. Top: ``torch.save`` onto the checkpoint empties it first, so a crash leaves a cut-off
    file and no good checkpoint. Bottom: write a temporary file in the same folder, flush and fsync it,
    then ``os.replace`` it onto the name; a crash at any moment leaves the old complete checkpoint (and
    at most a stray temporary file), never a half-written one under the checkpoint's name."""
    fig, ax = plt.subplots(figsize=(10.5, 4.4))  # a pyplot figure: the lesson ends its cell with finish(fig)
    ax.set_xlim(0, 13.6)
    ax.set_ylim(0, 5.6)
    ax.axis("off")

    ax.text(0.1, 5.25, "naive: torch.save(state, \"ckpt.pt\")", fontsize=10, weight="bold")
    _file(ax, 0.1, 4.0, "ckpt.pt\nstep 10, complete", GOOD)
    _arrow(ax, 2.25, 3.35, 4.37, "open: emptied")
    _file(ax, 3.4, 4.0, "ckpt.pt\n0 bytes, then filling", PARTIAL)
    _arrow(ax, 5.55, 6.65, 4.37, "writing...")
    ax.text(7.05, 4.37, "crash", ha="center", va="center", fontsize=10, color="red", weight="bold")
    _arrow(ax, 7.5, 8.6, 4.37, "")
    _file(ax, 8.65, 4.0, "ckpt.pt\ncut off: unreadable", BAD, w=2.3)
    ax.text(11.1, 4.37, "no good\ncheckpoint left", fontsize=8.5, va="center", color="darkred")

    ax.text(0.1, 3.0, "atomic: temporary file, fsync, rename", fontsize=10, weight="bold")
    _file(ax, 0.1, 1.75, "ckpt.pt\nstep 10, complete", GOOD)
    _arrow(ax, 2.25, 3.35, 2.12, "write a new file")
    _file(ax, 3.4, 1.75, ".ckpt.pt.tmp\n(same folder)", TEMP)
    _arrow(ax, 5.55, 6.65, 2.12, "flush + fsync")
    _file(ax, 6.7, 1.75, ".ckpt.pt.tmp\non the disk", TEMP)
    _arrow(ax, 8.85, 9.95, 2.12, "os.replace")
    _file(ax, 10.0, 1.75, "ckpt.pt\nstep 20, complete", GOOD)
    ax.text(5.6, 0.95, "crash before os.replace: ckpt.pt is still step 10, complete "
            "(plus a stray .tmp file to delete)", fontsize=8.5, ha="center", color="darkgreen")
    ax.text(5.6, 0.45, "os.replace is one step: a reader sees the old file or the new one, never a mix "
            "(only within one file system: keep the .tmp in the same folder)", fontsize=8.5, ha="center")
    return fig
