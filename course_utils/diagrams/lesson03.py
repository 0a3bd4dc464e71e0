"""Lesson 03's pictures: what ``nn.Module.__call__`` runs around your ``forward`` (and what
``model.forward(x)`` skips), and this run's cost of a call, every timed block shown.

The text in the figures is ASCII only: matplotlib's default font has no Chinese glyphs, and a missing
glyph is a warning in the stored output.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ..plotting import new_figure


def _box(ax, x: float, y: float, w: float, h: float, text: str, color: str, *, size: float = 9,
         dashed: bool = False, weight: str = "normal") -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.15", facecolor=color,
                                edgecolor="#333333", linewidth=1.2, linestyle="--" if dashed else "-"))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], color: str = "#333333",
           style: str = "-|>", dashed: bool = False, rad: float = 0.0) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=14, color=color, linewidth=1.6,
                                 linestyle="--" if dashed else "-", connectionstyle=f"arc3,rad={rad}"))


def call_path() -> Figure:
    """``model(x)`` goes through ``nn.Module.__call__``: forward pre-hooks, ``forward``, forward hooks,
    and the backward hooks it prepares for ``loss.backward()``; ``model.forward(x)`` enters ``forward``
    directly and skips them all.

    Why a picture: the lesson's whole point is a path with a side door, which reads at a glance."""
    fig, ax = new_figure("What model(x) runs around your forward", "x", "y", figsize=(10, 4.8))
    ax.set_xlim(0, 20)
    ax.set_ylim(0, 10)
    ax.axis("off")
    hook, yours, grad = "#fde9b8", "#cdeccd", "#f6d5d5"
    # the forward path, left to right
    _box(ax, 0.2, 6.6, 2.6, 1.6, "model(x)", "#e8f0fb", size=11, weight="bold")
    _box(ax, 3.4, 5.7, 15.9, 3.6, "", "#fafafa", dashed=True)
    ax.text(11.35, 8.85, "nn.Module.__call__  (no hooks registered: it jumps straight to forward)",
            ha="center", fontsize=9, style="italic")
    _box(ax, 3.8, 6.2, 4.4, 2.2, "1. forward pre-hooks\nsee the inputs,\nmay replace them", hook)
    _box(ax, 9.1, 6.2, 4.4, 2.2, "2. forward(x)\nyour code", yours, size=10, weight="bold")
    _box(ax, 14.4, 6.2, 4.4, 2.2, "3. forward hooks\nsee inputs and output,\nmay replace the output", hook)
    for a, b in (((2.8, 7.4), (3.8, 7.4)), ((8.2, 7.3), (9.1, 7.3)), ((13.5, 7.3), (14.4, 7.3))):
        _arrow(ax, a, b)
    # the side door
    _box(ax, 6.8, 3.6, 4.6, 1.3, "model.forward(x)", "#eeeeee", size=10, weight="bold")
    _arrow(ax, (10.6, 4.9), (11.0, 6.2), color="#c0392b")
    ax.text(12.0, 4.55, "skips 1, 3 and 4:\nsame numbers, no hooks", fontsize=9, color="#c0392b", va="center")
    # the backward path, right to left
    _box(ax, 14.4, 0.5, 4.9, 2.0, "loss.backward()", "#e8f0fb", size=11, weight="bold")
    _box(ax, 3.8, 0.5, 8.6, 2.0, "4. backward hooks (later, during loss.backward())\nsee the gradients of the module's "
         "outputs\nand inputs, in reverse layer order", grad)
    _arrow(ax, (14.4, 1.5), (12.4, 1.5))
    _arrow(ax, (4.6, 5.7), (4.6, 2.5), color="#777777", dashed=True)
    ax.text(4.8, 4.1, "prepared\nby __call__", fontsize=8.5, color="#555555", va="center")
    return fig


def call_costs(block_us: Mapping[str, Sequence[float]], median_us: Mapping[str, float],
               groups: Sequence[Sequence[str]]) -> Figure:
    """The cost of one call for each case: every timed block as a dot, the lesson's figure as a red line.

    ``block_us`` maps a case to its per-call times in microseconds (all blocks of all rounds);
    ``median_us`` to the figure the lesson records (the median of the rounds' medians), so that the
    line and the printout agree; ``groups`` puts the cases into panels (cases of very different size get
    their own axis). Why the dots: a median alone hides how much the blocks disagree, and on a shared
    machine they do."""
    fig, axes = new_figure("Time per call on this machine: every timed block (dots), the recorded median (red)",
                           "time per call (us, log scale)", "case", ncols=len(groups), figsize=(11, 3.6))
    axes = axes if len(groups) > 1 else [axes]
    for ax, cases in zip(axes, groups):
        for i, case in enumerate(cases):
            times = list(block_us[case])
            med = median_us[case]
            jitter = [i + 0.25 * ((k * 7) % 11 / 10 - 0.5) for k in range(len(times))]
            ax.scatter(times, jitter, s=10, color="#1f4e79", alpha=0.7, zorder=3)
            ax.plot([med, med], [i - 0.3, i + 0.3], color="#c0392b", linewidth=3, zorder=4)
            ax.text(med, i + 0.45, f"{med:.2f} us", ha="center", fontsize=8, color="#c0392b")
        ax.set_yticks(range(len(cases)), cases, fontsize=8)
        ax.set_ylim(len(cases) - 0.4, -0.6)
        ax.set_xscale("log")  # a loaded machine throws blocks 100x off: a linear axis would show only them
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 1, 2, 5, 10, 20, ...: plain numbers
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    return fig
