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


def _file(ax, x: float, y: float, text: str, color: str, w: float = 2.2, h: float = 0.85) -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.03", facecolor=color, edgecolor="black", lw=1))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=11)


def _arrow(ax, x0: float, x1: float, y: float, label: str) -> None:
    ax.add_patch(FancyArrowPatch((x0, y), (x1, y), arrowstyle="->", mutation_scale=14, lw=1.4))
    ax.text((x0 + x1) / 2, y + 0.1, label, ha="center", va="bottom", fontsize=9.5, linespacing=1.0)


def atomic_save() -> Figure:
    """Two rows. Top: ``torch.save`` onto the checkpoint empties it first, so a crash leaves a cut-off
    file and no good checkpoint. Bottom: write a temporary file in the same folder, flush and fsync it,
    then ``os.replace`` it onto the name; a crash at any moment leaves the old complete checkpoint (and
    at most a stray temporary file), never a half-written one under the checkpoint's name. Fonts of 9.5
    to 12 pt: the deck shows this figure about 1,050 px wide, where 11 pt is about 15 px."""
    fig, ax = plt.subplots(figsize=(10.5, 4.4))  # a pyplot figure: the lesson ends its cell with finish(fig)
    ax.set_xlim(0, 12.6)
    ax.set_ylim(0.1, 5.6)
    ax.axis("off")

    ax.text(0.1, 5.3, "naive: torch.save(state, \"ckpt.pt\")", fontsize=12, weight="bold")
    _file(ax, 0.1, 3.95, "ckpt.pt\nstep 10, complete", GOOD)
    _arrow(ax, 2.35, 3.35, 4.37, "open:\nemptied")
    _file(ax, 3.4, 3.95, "ckpt.pt\n0 bytes, filling", PARTIAL)
    _arrow(ax, 5.65, 6.45, 4.37, "writing")
    ax.text(6.95, 4.37, "crash", ha="center", va="center", fontsize=12, color="red", weight="bold")
    _arrow(ax, 7.45, 8.2, 4.37, "")
    _file(ax, 8.25, 3.95, "ckpt.pt\ncut off: unreadable", BAD, w=2.4)
    ax.text(10.8, 4.37, "no good\ncheckpoint\nleft", fontsize=11, va="center", color="darkred")

    ax.text(0.1, 3.15, "atomic: temporary file, fsync, rename", fontsize=12, weight="bold")
    _file(ax, 0.1, 1.8, "ckpt.pt\nstep 10, complete", GOOD)
    _arrow(ax, 2.35, 3.35, 2.22, "write a\nnew file")
    _file(ax, 3.4, 1.8, ".ckpt.pt.tmp\n(same folder)", TEMP)
    _arrow(ax, 5.65, 6.65, 2.22, "flush +\nfsync")
    _file(ax, 6.7, 1.8, ".ckpt.pt.tmp\non the disk", TEMP)
    _arrow(ax, 8.95, 9.95, 2.22, "os.\nreplace")
    _file(ax, 10.0, 1.8, "ckpt.pt\nstep 20, complete", GOOD)
    ax.text(6.2, 1.0, "crash before os.replace: ckpt.pt is still step 10, complete (plus a stray .tmp to delete)",
            fontsize=10.5, ha="center", color="darkgreen")
    ax.text(6.2, 0.4, "os.replace is one step: a reader sees the old file or the new one, never a mix\n"
            "(within one file system: keep the .tmp in the same folder)", fontsize=10.5, ha="center", va="center")
    return fig
