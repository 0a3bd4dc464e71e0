"""Lesson 04's picture: what a GPU is made of, next to the host it is plugged into.

Used by: notebook 04. The numbers are arguments, so that a GPU run
draws its own card (SM count, L2 size and memory from ``torch.cuda.get_device_properties``) and a CPU
run draws the course's reference card, an H200 SXM, from its datasheet.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle


def _box(ax, x: float, y: float, w: float, h: float, color: str, text: str = "", size: float = 9, **kw) -> None:
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="black", lw=1))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, **kw)


def _sm(ax, x: float, y: float, w: float, h: float, cores_per_sm: int, tensor_per_sm: int) -> None:
    """One SM: a grid of small CUDA-core squares on top, Tensor Cores below."""
    _box(ax, x, y, w, h, "#dbe9f6")
    cols, rows = 8, 4
    cw, ch = (w - 0.1) / cols, 0.5 * h / rows
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x + 0.05 + c * cw + 0.01, y + h - 0.08 - (r + 1) * ch + 0.01),
                                   cw - 0.02, ch - 0.02, facecolor="#4c8cc9", lw=0))
    tw = (w - 0.1) / tensor_per_sm
    for t in range(tensor_per_sm):
        _box(ax, x + 0.05 + t * tw + 0.01, y + 0.06, tw - 0.02, 0.28 * h, "#f2a93b")


def gpu_anatomy(n_sms: int = 132, cores_per_sm: int | None = 128, tensor_per_sm: int = 4, l2_mb: float = 50,
                memory_gb: float = 141, memory_type: str = "HBM3e", bandwidth_tbs: float | None = 4.8,
                name: str = "H200 SXM (datasheet)", link: str = "PCIe 5.0 x16\nabout 64 GB/s\neach way") -> Figure:
    """Host (CPU, RAM) -- the host link -- the GPU: many SMs (CUDA cores + Tensor Cores), a shared L2
    cache, and the GPU's own memory (HBM). Returns the figure; the lesson's caption describes it."""
    fig, ax = plt.subplots(figsize=(10, 4.6))  # a pyplot figure: the lesson ends its cell with finish(fig)
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.6)
    ax.axis("off")

    # the host: what a laptop is
    _box(ax, 0.2, 0.6, 2.0, 3.3, "#eeeeee")
    ax.text(1.2, 3.65, "host (your laptop's part)", ha="center", fontsize=9, weight="bold")
    _box(ax, 0.45, 2.2, 1.5, 1.0, "#ffffff", "CPU\na few big cores")
    _box(ax, 0.45, 0.9, 1.5, 1.0, "#ffffff", "RAM\n(host memory)")

    # the link between them
    ax.add_patch(FancyArrowPatch((2.25, 2.25), (3.05, 2.25), arrowstyle="<->", mutation_scale=18, lw=2))
    ax.text(2.65, 2.45, "link", ha="center", fontsize=8)
    ax.text(2.65, 2.05, link, ha="center", va="top", fontsize=7)

    # the device
    _box(ax, 3.1, 0.25, 6.7, 4.1, "#f7f7f7")
    ax.text(6.45, 4.12, f"device: one GPU, {name}", ha="center", fontsize=9, weight="bold")
    shown = 6
    for i in range(shown):
        _sm(ax, 3.3 + i * 0.98, 2.45, 0.88, 1.4, cores_per_sm, tensor_per_sm)
    ax.text(3.3 + shown * 0.98 - 0.05, 3.15, "...", fontsize=14, va="center")
    cores = f"{cores_per_sm} CUDA cores" if cores_per_sm else "CUDA cores"
    ax.text(6.3, 2.28, f"{n_sms} SMs (streaming multiprocessors), each with {cores} (blue) "
                       f"and {tensor_per_sm} Tensor Cores (orange)", ha="center", va="top", fontsize=8)
    _box(ax, 3.3, 1.45, 6.3, 0.45, "#c9e6c3", f"L2 cache, shared by all SMs: {l2_mb:g} MB", 8)
    bw = f", {bandwidth_tbs:g} TB/s" if bandwidth_tbs else ""
    _box(ax, 3.3, 0.45, 6.3, 0.75, "#f6d3d3", f"GPU memory ({memory_type}, also called VRAM): {memory_gb:g} GB{bw}", 9)
    for x in (4.0, 6.45, 8.9):  # memory feeds the cache, the cache feeds the SMs
        ax.add_patch(FancyArrowPatch((x, 1.22), (x, 1.43), arrowstyle="<->", mutation_scale=10))
        ax.add_patch(FancyArrowPatch((x, 1.92), (x, 2.08), arrowstyle="<->", mutation_scale=10))
    return fig


# FP32 CUDA cores and Tensor Cores per SM, by compute capability (NVIDIA's architecture whitepapers:
# Volta/Turing 64 + 8, A100 64 + 4, GeForce Ampere/Ada/Blackwell and Hopper 128 + 4).
_PER_SM = {(7, 0): (64, 8), (7, 5): (64, 8), (8, 0): (64, 4), (8, 6): (128, 4), (8, 7): (128, 4), (8, 9): (128, 4),
           (9, 0): (128, 4), (12, 0): (128, 4)}


def gpu_anatomy_for(device) -> Figure:
    """The picture for this run: this GPU's own SM count, L2 and memory on CUDA; else the H200 SXM datasheet."""
    import torch

    if getattr(device, "type", str(device)) != "cuda":
        return gpu_anatomy()
    p = torch.cuda.get_device_properties(device)
    cores, tensor = _PER_SM.get((p.major, p.minor), (None, 4))
    return gpu_anatomy(n_sms=p.multi_processor_count, cores_per_sm=cores, tensor_per_sm=tensor,
                       l2_mb=round(p.L2_cache_size / 1e6, 1), memory_gb=round(p.total_memory / 1e9, 1),
                       memory_type="device memory", bandwidth_tbs=None, name=f"{p.name} (this run)",
                       link="PCIe (or NVLink-C2C)")
