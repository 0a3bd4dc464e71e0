"""Lesson 01's pictures: where a tensor lives (host, PCIe, device), the CPU's queue of launches beside
the GPU's timeline, and the torch.mm throughput curves of this run beside every GPU results card.

Each function returns a matplotlib figure; the lesson ends its cell with ``finish(fig)``. The text in
the figures is ASCII only: matplotlib's default font has no Chinese glyphs, and a missing glyph is a
warning in the stored output (the lesson's prose gives the Chinese words).
"""
from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.ticker import NullLocator

from ..plotting import new_figure


def _box(ax, x: float, y: float, w: float, h: float, text: str, *, color: str, size: int = 10,
         weight: str = "normal", va: str = "center", text_y: float | None = None) -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.15",
                                facecolor=color, edgecolor="#333333", linewidth=1.2))
    ax.text(x + w / 2, text_y if text_y is not None else y + h / 2, text, ha="center", va=va,
            fontsize=size, weight=weight)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], *, color: str = "#333333",
           style: str = "-|>", width: float = 1.6) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=16, color=color, linewidth=width))


def host_device() -> Figure:
    """Host (CPU + RAM) and device (SMs + HBM) joined by PCIe, with the copy that ``x.to("cuda")`` makes.

    Why a picture: "where a tensor lives" is a place on a board, and the only road between the two
    memories is the PCIe link; every ``.to``, ``.cpu()`` and ``.item()`` between them crosses it.
    """
    fig, ax = new_figure("Where a tensor lives", "host: the CPU side", "one machine", figsize=(10, 4.6))
    ax.set_xlim(0, 20)
    ax.set_ylim(0, 10)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.grid(False)
    for side in ax.spines.values():
        side.set_visible(False)

    # the host: CPU and its RAM
    _box(ax, 0.3, 0.4, 7.4, 8.6, "", color="#e8f0fb")
    ax.text(4.0, 8.45, "HOST (device 'cpu')", ha="center", fontsize=12, weight="bold")
    _box(ax, 0.9, 5.2, 6.2, 2.5, "CPU\na few to a few dozen cores\nruns Python, PyTorch, your loop",
         color="#cfe0f7", size=9)
    _box(ax, 0.9, 1.0, 6.2, 3.3, "", color="#ffffff")
    ax.text(4.0, 3.75, "RAM (main memory)", ha="center", fontsize=10, weight="bold")
    _box(ax, 2.2, 1.5, 3.6, 1.4, "x  (x.device: cpu)", color="#fde9b8", size=9)

    # the device: SMs and HBM
    _box(ax, 12.3, 0.4, 7.4, 8.6, "", color="#e9f6e9")
    ax.text(16.0, 8.45, "DEVICE (device 'cuda')", ha="center", fontsize=12, weight="bold")
    _box(ax, 12.9, 5.2, 6.2, 2.5, "", color="#cdeccd")
    ax.text(16.0, 7.25, "GPU chip: each square is one SM", ha="center", fontsize=9)
    for row in range(2):
        for col in range(8):
            ax.add_patch(FancyBboxPatch((13.25 + col * 0.72, 5.45 + row * 0.7), 0.52, 0.5,
                                        boxstyle="round,pad=0.01", facecolor="#8fd18f", edgecolor="#2b6e2b"))
    _box(ax, 12.9, 1.0, 6.2, 3.3, "", color="#ffffff")
    ax.text(16.0, 3.75, "VRAM (GPU memory: HBM or GDDR)", ha="center", fontsize=10, weight="bold")
    _box(ax, 14.2, 1.5, 3.6, 1.4, "y = x.to('cuda')\n(y.device: cuda:0)", color="#fde9b8", size=9)

    # the link between them
    _arrow(ax, (7.8, 4.7), (12.2, 4.7), style="<|-|>", width=2.2)
    ax.text(10.0, 5.05, "PCIe", ha="center", fontsize=12, weight="bold")
    ax.text(10.0, 3.9, "the narrow road:\nslower than\neither side's\nown memory", ha="center", va="top", fontsize=8.5)
    _arrow(ax, (5.85, 2.2), (14.15, 2.2), color="#c0392b", width=2.0)
    ax.text(10.0, 1.55, "x.to('cuda'): copies\nthe bytes across", ha="center", va="top", fontsize=8.5, color="#c0392b")
    _arrow(ax, (14.15, 0.75), (5.85, 0.75), color="#1f5fa8", width=1.4)
    ax.text(10.0, 0.12, ".cpu(), .item(), print(y): back", ha="center", fontsize=8.5, color="#1f5fa8")
    return fig


def launch_queue(launch_us: float = 10.0, kernel_us: float = 40.0, kernels: int = 4) -> Figure:
    """The CPU queues kernels and runs ahead; the GPU works through the queue; ``.item()`` waits for it.

    Why a picture: a timer read right after the last launch stops at the dashed line, long before the
    GPU has finished; only a wait (a sync, or ``.item()``) moves the clock read to the true end.
    """
    fig, ax = new_figure("The CPU queues work, the GPU runs it later", "time (microseconds, made-up example)", "where it runs",
                         figsize=(10, 3.2))
    ax.set_yticks([1, 0], ["CPU (host)", "GPU (device)"])
    ax.set_ylim(-0.6, 1.6)
    ax.grid(False)
    gpu_free = 0.0
    for i in range(kernels):
        start = i * launch_us
        ax.barh(1, launch_us * 0.8, left=start, height=0.5, color="#5b8fd6", edgecolor="#333333")
        ax.text(start + launch_us * 0.4, 1.38, f"L{i + 1}", ha="center", fontsize=8)
        gpu_start = max(gpu_free, start + launch_us * 0.8)
        ax.barh(0, kernel_us, left=gpu_start, height=0.5, color="#6cc46c", edgecolor="#333333")
        ax.text(gpu_start + kernel_us / 2, 0, f"kernel {i + 1}", ha="center", va="center", fontsize=8)
        gpu_free = gpu_start + kernel_us
    queued_end = kernels * launch_us
    ax.barh(1, gpu_free - queued_end, left=queued_end, height=0.5, color="#f2c6c0", edgecolor="#c0392b",
            hatch="//")
    ax.text((queued_end + gpu_free) / 2, 1, ".item() waits (a sync)", ha="center", va="center", fontsize=9)
    ax.axvline(queued_end, color="#c0392b", linestyle="--", linewidth=1.2)
    ax.text(queued_end, -0.5, "timer without a sync\nstops here", ha="center", fontsize=8, color="#c0392b")
    ax.axvline(gpu_free, color="#1f7a1f", linestyle="--", linewidth=1.2)
    ax.text(gpu_free, -0.5, "the work is done here", ha="center", fontsize=8, color="#1f7a1f")
    ax.set_xlim(0, gpu_free * 1.08)
    return fig


def mm_throughput(curves: dict[str, dict[int, float]]) -> Figure:
    """torch.mm GFLOP/s against matrix size n, one line per machine, on log axes (sizes double, rates span
    orders of magnitude). ``curves`` maps a label ("CPU, this machine", "h200 card (GPU)") to {n: GFLOP/s};
    labels that contain "card" are drawn dashed, so a measured run and a stored card never look alike."""
    fig, ax = new_figure("torch.mm throughput (float32)", "matrix size n (n x n)", "throughput (GFLOP/s)")
    ticks: set[int] = set()
    for label, curve in curves.items():
        sizes = sorted(curve)
        ticks.update(sizes)
        ax.plot(sizes, [curve[n] for n in sizes], "s--" if "card" in label else "o-", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks_sorted = sorted(ticks)
    ax.set_xticks(ticks_sorted, [str(n) for n in ticks_sorted])
    ax.xaxis.set_minor_locator(NullLocator())
    return fig
