"""Lesson 10's pictures, all drawn from this run's measurements: where the slow loop's time goes by
operator (the profiler's table as bars), the five phases of a step before and after the fixes, and
the cumulative speed-up fix by fix beside the results cards.

Each function returns a matplotlib figure; the lesson ends the cell with ``finish(fig)``. The queue
of launches and the wait at ``.item()`` is lesson 02's :func:`course_utils.diagrams.lesson02.launch_queue`.
"""
from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..plotting import new_figure

PHASE_COLOURS = ("#4c72b0", "#55a868", "#c44e52", "#8172b2", "#ccb974")


def top_ops(ops_us: dict[str, float], step_us: float, title: str = "The slow loop: where a step's time goes") -> Figure:
    """Horizontal bars: microseconds per step of *self* time of each operator or range (largest on
    top), as the profiler's table lists them, with the whole step for scale."""
    fig, ax = new_figure(title, "self time per step (us)", "operator or range", figsize=(8.0, 1.0 + 0.3 * len(ops_us)))
    names = list(ops_us)[::-1]
    values = [ops_us[n] for n in names]
    ax.barh(range(len(names)), values, color="#4c72b0")
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:.0f} us ({v / step_us:.0%})", va="center", fontsize=11)  # readable on a slide
    ax.set_yticks(range(len(names)), names, fontsize=11)
    ax.set_xlim(0, 1.3 * max(values))
    ax.grid(axis="y", visible=False)
    return fig


def phases(slow_ms: dict[str, float], fixed_ms: dict[str, float]) -> Figure:
    """Two stacked bars, the slow loop and the fixed one: milliseconds per step in each phase."""
    fig, ax = new_figure("One step, phase by phase: before and after the five fixes", "time per step (ms)", "loop",
                         figsize=(8.0, 2.6))
    for y, parts in ((1.0, slow_ms), (0.0, fixed_ms)):
        left = 0.0
        for (phase, ms), colour in zip(parts.items(), PHASE_COLOURS):
            ax.barh(y, ms, left=left, height=0.6, color=colour)
            left += ms
        ax.text(left, y, f"  {left:.2f} ms", va="center", fontsize=9)
    ax.set_yticks([1.0, 0.0], ["slow loop", "fixed loop"])
    ax.set_xlim(0, 1.2 * sum(slow_ms.values()))
    ax.grid(axis="y", visible=False)
    ax.legend(handles=[Patch(color=c, label=p) for p, c in zip(slow_ms, PHASE_COLOURS)],
              loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=5, fontsize=8)
    return fig


def cumulative(labels: list[str], series: dict[str, list[float]]) -> Figure:
    """Grouped bars: the speed-up over the slow loop after each fix (each bar keeps the fixes before
    it), one colour per machine (this run first, then each results card)."""
    fig, ax = new_figure("Cumulative speed-up of the training loop, fix by fix", "fixes applied (cumulative)",
                         "speed-up over the slow loop (x)")
    width = 0.8 / len(series)
    for k, (label, values) in enumerate(series.items()):
        ax.bar([i + k * width for i in range(len(labels))], values, width=width, label=label)
    ax.axhline(1.0, color="gray", lw=1, ls=":")
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(labels))], labels, rotation=20, ha="right")
    return fig


def break_even_lines(cases: dict[str, dict]) -> Figure:
    """Total seconds to train n steps, eager and compiled, one panel per model: each line starts at the first
    call's time (compiling, for the compiled model) and rises by the time per step. Where the lines cross is
    the break-even; lines that never cross mean compiling never pays off. ``cases``: name -> the lesson's
    ``{"eager": {"first_s", "step_s"}, "compiled": {...}}``."""
    fig, axes = new_figure("Total training time: eager vs compiled", "training steps", "total time (s)", ncols=len(cases))
    axes = axes if len(cases) > 1 else [axes]
    for ax, (name, r) in zip(axes, cases.items()):
        e, c = r["eager"], r["compiled"]
        saving = e["step_s"] - c["step_s"]
        cross = (c["first_s"] - e["first_s"]) / saving if saving > 0 else None
        end = max(20_000, 2 * cross) if cross else 20_000
        for kind, colour in (("eager", "#4c72b0"), ("compiled", "#dd8452")):
            ax.plot([0, end], [r[kind]["first_s"], r[kind]["first_s"] + end * r[kind]["step_s"]], color=colour, label=kind)
        if cross:
            ax.axvline(cross, color="gray", ls=":", lw=1)
            ax.text(cross, ax.get_ylim()[1] * 0.95, f" break-even\n {cross:,.0f} steps", fontsize=8, va="top")
        ax.set_title(name if cross else f"{name}: never pays off here", fontsize=10)
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"))
    return fig
