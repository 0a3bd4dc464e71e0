"""Lesson 11's pictures: what each rank holds under DDP, ZeRO-1, ZeRO-2 and ZeRO-3, and what the
ranks send each other in one step. Both are drawn from this run's numbers (the lesson passes them).
Used by: notebook 11.
"""
from __future__ import annotations

from collections.abc import Mapping

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..plotting import new_figure

MiB = 2**20
PARTS = (("params", "weights", "#4C72B0"), ("grads", "gradients", "#DD8452"), ("optimizer", "Adam's state", "#55A868"))
STAGES = (("ddp", "DDP\n(ZeRO-0)"), ("zero1", "ZeRO-1"), ("zero2", "ZeRO-2"), ("zero3", "ZeRO-3"))


def what_each_rank_holds(measured: Mapping[str, Mapping[str, float] | None], formula: Mapping[str, Mapping[str, float]],
                         world: int, gathered_zero2: float = 0.0) -> Figure:
    """Stacked bars, one per stage: the bytes of weights, gradients and optimizer state ONE rank holds.

    ``measured[stage]``: this run's bytes per part (``held_bytes`` on rank 0, between steps), or None
    where the stage was not run: then the bar is drawn from ``formula[stage]`` (lesson 05's ZeRO
    formula), hatched and labelled "predicted". ``gathered_zero2``: the weights FSDP2's ZeRO-2 keeps
    whole from forward to backward (the formula's w(N-1)/N), drawn hatched on top of its bar: between
    steps FSDP2's ZeRO-2 is as sharded as ZeRO-3, during the step it holds every weight whole.
    A black tick marks the formula's total for each stage.
    """
    fig, ax = new_figure(f"What one rank holds: {world} ranks, Adam, fp32", "how the job is split",
                         "MiB per rank", figsize=(9.0, 4.2))
    for x, (stage, _) in enumerate(STAGES):
        got = measured.get(stage)
        parts = got if got is not None else formula[stage]
        bottom = 0.0
        for key, _, color in PARTS:
            height = parts[key] / MiB
            ax.bar(x, height, 0.6, bottom=bottom, color=color, edgecolor="white", hatch=None if got else "//")
            bottom += height
        label = f"{sum(parts.values()) / MiB:.1f}" + ("" if got else "\npredicted")
        if stage == "zero2" and gathered_zero2:
            ax.bar(x, gathered_zero2 / MiB, 0.6, bottom=bottom, color="none", edgecolor=PARTS[0][2], hatch="..")
            bottom += gathered_zero2 / MiB
            label += f"\n+{gathered_zero2 / MiB:.1f} during the step"
        total = sum(formula[stage].values()) / MiB + (gathered_zero2 / MiB if stage == "zero2" else 0)
        ax.plot([x - 0.36, x + 0.36], [total, total], color="black", lw=2)
        ax.annotate(label, (x, bottom), ha="center", va="bottom", fontsize=9, xytext=(0, 3), textcoords="offset points")
    ax.set_xticks(range(len(STAGES)), [name for _, name in STAGES])
    ax.set_ylim(0, ax.get_ylim()[1] * 1.12)
    handles = [Patch(color=color, label=label) for _, label, color in PARTS]
    if any(measured.get(stage) is None for stage, _ in STAGES):  # a legend entry only for what is drawn
        handles.append(Patch(facecolor="none", edgecolor="black", hatch="//", label="predicted (not run)"))
    if gathered_zero2:
        handles.append(Patch(facecolor="none", edgecolor=PARTS[0][2], hatch="..", label="gathered weights (formula)"))
    handles.append(Line2D([], [], color="black", lw=2, label="lesson 05's formula"))
    ax.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))  # nothing labelled on the axes:
    return fig  # plotting.finish keeps this legend


def bytes_sent_per_step(traffic: Mapping[str, Mapping[str, float]], psi_bytes: float, world: int) -> Figure:
    """Stacked bars, one per variant: the bytes of each kind of collective one rank took part in during
    one step (this run's profiler, the tensors' sizes), in units of the model's fp32 size 4Ψ.
    ``traffic[variant][kind]``: bytes, kinds "all-reduce", "all-gather", "reduce-scatter", "broadcast"."""
    kinds = (("all-reduce", "#8172B3"), ("all-gather", "#4C72B0"), ("reduce-scatter", "#DD8452"), ("broadcast", "#937860"))
    fig, ax = new_figure(f"What one step sends between {world} ranks (this run)", "variant",
                         "collective tensor bytes (x model size 4Ψ)", figsize=(7.0, 3.8))
    names = list(traffic)
    for kind, color in kinds:
        bottoms = [sum(traffic[n].get(k, 0) for k, _ in kinds[:[k for k, _ in kinds].index(kind)]) / psi_bytes
                   for n in names]
        heights = [traffic[n].get(kind, 0) / psi_bytes for n in names]
        if any(heights):
            ax.bar(range(len(names)), heights, 0.6, bottom=bottoms, color=color, label=kind)
    for x, n in enumerate(names):
        total = sum(traffic[n].values()) / psi_bytes
        ax.annotate(f"{total:.2f}x", (x, total), ha="center", va="bottom", xytext=(0, 3), textcoords="offset points")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.15)
    return fig


__all__ = ["bytes_sent_per_step", "what_each_rank_holds"]
