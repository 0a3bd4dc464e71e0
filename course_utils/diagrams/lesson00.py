"""Lesson 00's pictures: this machine as the run detected it (host and device), and how long each
check of the checklist took.

Both are drawn from this run's numbers, so a GPU run shows its GPU and a laptop its own cores and RAM.
The text in the figures is ASCII only: matplotlib's default font has no Chinese glyphs, and a missing
glyph is a warning in the stored output (the lesson's prose gives the Chinese words).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ..plotting import new_figure

HOST, DEVICE, NONE = "#e8f0fb", "#e9f6e9", "#f4f4f4"


def total_ram_gib() -> float | None:
    """The machine's RAM in GiB where the OS tells it (Linux, macOS), else ``None``.

    Why here: ``environment_report`` has no RAM figure, and the picture of the host needs one."""
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (AttributeError, ValueError, OSError):  # Windows has no sysconf
        return None


def _box(ax, x: float, y: float, w: float, h: float, color: str, *, dashed: bool = False) -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.2", facecolor=color,
                                edgecolor="#333333", linewidth=1.2, linestyle="--" if dashed else "-"))


def machine(report: dict[str, Any], ram_gib: float | None) -> Figure:
    """This machine as a picture: the host (CPU cores, RAM) on the left, each device on the right.

    ``report`` is ``environment_report()``. Why a picture: the course keeps asking "where does this
    tensor live, and who computes on it?"; the answer is one of these boxes, and this run drew them."""
    gpus = report.get("gpus", [])
    fig, ax = new_figure("This machine, as this run detected it", "x", "y", figsize=(10, 4.2))
    ax.set_xlim(0, 20)
    ax.set_ylim(0, 10)
    ax.axis("off")
    _box(ax, 0.3, 0.5, 8.0, 8.6, HOST)
    ax.text(4.3, 8.4, "HOST (device 'cpu')", ha="center", fontsize=12, weight="bold")
    cpu = str(report.get("cpu_model") or "CPU")[:38]
    _box(ax, 0.9, 5.0, 6.8, 2.6, "#cfe0f7")
    ax.text(4.3, 6.3, f"CPU: {report.get('cpu_count')} logical cores\n{cpu}\nruns Python and your loop",
            ha="center", va="center", fontsize=9)
    _box(ax, 0.9, 1.1, 6.8, 3.0, "#ffffff")
    ram = f"{ram_gib:g} GiB" if ram_gib else "size not reported"
    ax.text(4.3, 2.6, f"RAM (main memory)\n{ram}", ha="center", va="center", fontsize=10)
    if gpus:
        h = 8.6 / len(gpus[:4])
        for i, gpu in enumerate(gpus[:4]):
            y = 0.5 + (len(gpus[:4]) - 1 - i) * h
            _box(ax, 11.7, y + 0.1, 8.0, h - 0.2, DEVICE)
            ax.text(15.7, y + h / 2, f"DEVICE 'cuda:{gpu['index']}'\n{gpu['name']}\n{gpu['multiprocessors']} SMs, "
                    f"compute capability {gpu['compute_capability']}\nVRAM (GPU memory): {gpu['memory_gib']} GiB",
                    ha="center", va="center", fontsize=9 if len(gpus) < 3 else 7)
        more = f" (+{len(gpus) - 4} more)" if len(gpus) > 4 else ""
        link = "PCIe (or NVLink)" + more
    elif report.get("mps_available"):
        _box(ax, 11.7, 0.5, 8.0, 8.6, DEVICE)
        ax.text(15.7, 4.8, "DEVICE 'mps'\nApple GPU\nshares the host's RAM\n(unified memory)",
                ha="center", va="center", fontsize=10)
        link = "same chip"
    else:
        _box(ax, 11.7, 0.5, 8.0, 8.6, NONE, dashed=True)
        ax.text(15.7, 4.8, "no GPU found\n\nevery lesson runs on the host;\nGPU figures come from\n"
                "GPU results cards", ha="center", va="center", fontsize=10, color="#555555")
        link = "nothing to cross"
    ax.add_patch(FancyArrowPatch((8.5, 4.8), (11.5, 4.8), arrowstyle="<|-|>", mutation_scale=16,
                                 color="#333333" if gpus or report.get("mps_available") else "#aaaaaa", linewidth=2))
    ax.text(10.0, 5.3, link, ha="center", fontsize=9, weight="bold")
    return fig


def checklist_times(checks: Sequence[tuple[str, str, str, str, float]]) -> Figure:
    """How long each check took, in milliseconds on a log scale, flags and tests in two colours.

    ``checks`` are the lesson's ``(name, kind, status, detail, seconds)`` rows; skipped checks ran
    nothing and are left out. Why a picture: a flag answers in microseconds, a test that proves
    something takes milliseconds or more, and the gap is too wide to read from a list of numbers."""
    ran = [c for c in checks if c[2] != "SKIP"]
    fig, ax = new_figure("How long each check took on this machine", "time (ms, log scale)", "check",
                         figsize=(9, 0.45 * len(ran) + 1.6))
    colors = {"flag": "#7fa7d9", "test": "#e08a3c"}
    for i, (name, kind, status, _detail, seconds) in enumerate(ran):
        ms = max(seconds * 1e3, 1e-4)  # a log axis cannot show 0
        ax.barh(i, ms, color=colors[kind], label=kind if kind not in [c[1] for c in ran[:i]] else None)
        ax.text(ms * 1.15, i, f"{status}  {ms:.3g} ms", va="center", fontsize=8)
    ax.set_yticks(range(len(ran)), [c[0] for c in ran], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(1e-4, max(c[4] for c in ran) * 1e3 * 20)
    return fig
