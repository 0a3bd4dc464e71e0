"""Lesson 09's pictures: DataParallel vs DDP, one DDP step with its buckets, and where a step's time goes."""
from __future__ import annotations

from matplotlib.figure import Figure


def _box(ax, x: float, y: float, w: float, h: float, text: str, color: str, size: int = 9) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", fc=color, ec="0.3"))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)


def dp_vs_ddp(gpus: int = 4) -> Figure:
    """Left: ``nn.DataParallel``, one process whose threads drive every GPU, GPU 0 doing the extra work.
    Right: DDP, one process per GPU, gradients averaged between the GPUs (drawn as a ring)."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, title in ((left, "nn.DataParallel: 1 process, 1 thread per GPU"),
                      (right, "DDP: 1 process per GPU, gradients all-reduced")):
        ax.set(xlim=(0, 10), ylim=(-1.5, 10))
        ax.axis("off")
        ax.set_title(title, fontsize=11)
    step = 9.6 / gpus
    _box(left, 1, 6.6, 8, 2.6, "one Python process (one GIL)\nreplicate model, scatter batch,\n"
         "run threads, gather outputs", "#fde0c5")
    for i in range(gpus):
        _box(left, 0.3 + step * i, 1.2, step - 0.4, 2.2, f"GPU {i}" + ("\nloss, gather,\nextra memory" if i == 0 else ""),
             "#f4a582" if i == 0 else "#fddbc7", size=8)
        left.annotate("", xy=(0.1 + step * (i + 0.5), 3.5), xytext=(5, 6.5), arrowprops=dict(arrowstyle="<->", color="0.4"))
    for i in range(gpus):
        _box(right, 0.3 + step * i, 6.2, step - 0.4, 2.6, f"process\nrank {i}\nown data\nshare", "#d1e5f0", size=8)
        _box(right, 0.3 + step * i, 1.2, step - 0.4, 1.6, f"GPU {i}", "#92c5de")
        right.annotate("", xy=(0.1 + step * (i + 0.5), 2.9), xytext=(0.1 + step * (i + 0.5), 6.1),
                       arrowprops=dict(arrowstyle="->"))
    for i in range(gpus - 1):  # drawn as a ring: each GPU talks to its neighbours
        right.annotate("", xy=(0.1 + step * (i + 1.5), 1.15), xytext=(0.1 + step * (i + 0.5), 1.15),
                       arrowprops=dict(arrowstyle="<->", color="#2166ac", lw=1.5, connectionstyle="arc3,rad=0.5"))
    right.text(5, -0.9, "all-reduce: every GPU ends with the average gradient\n(drawn as a ring; the library "
               "picks how the bytes travel)", ha="center", fontsize=9, color="#2166ac")
    fig.tight_layout()
    return fig


def bucket_overlap() -> Figure:
    """One DDP step on one rank (schematic): the gradients of the last layers are ready first, their
    bucket is all-reduced while backward still computes the first layers; only the rest is exposed."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.4))
    for start, length, label, color in [(0, 3, "forward", "#bdbdbd"), (3, 1, "grad L4", "#fdae61"),
                                        (4, 1, "grad L3", "#fdae61"), (5, 1, "grad L2", "#fee08b"),
                                        (6, 1, "grad L1", "#fee08b"), (8.2, 0.8, "step", "#a6d96a")]:
        ax.barh(1, length, left=start, color=color, edgecolor="0.3")
        ax.text(start + length / 2, 1, label, ha="center", va="center", fontsize=8)
    for start, length, label, color in [(5, 1.6, "bucket 1\n(L4, L3)", "#fdae61"), (7, 1.2, "bucket 2\n(L2, L1)", "#fee08b")]:
        ax.barh(0, length, left=start, color=color, edgecolor="0.3", hatch="//")
        ax.text(start + length / 2, 0, label, ha="center", va="center", fontsize=8)
    ax.axvline(7, color="0.4", ls=":")
    ax.text(7.05, 1.5, "backward ends", fontsize=8, color="0.3")
    ax.annotate("bucket 1 is averaged while\nL2 and L1 are still computed", xy=(5.5, -0.35), xytext=(0.3, -0.8),
                fontsize=8, arrowprops=dict(arrowstyle="->", color="0.4"))
    ax.annotate("only this part of the\ncommunication is exposed", xy=(7.8, -0.35), xytext=(8.3, -0.8), fontsize=8,
                arrowprops=dict(arrowstyle="->", color="0.4"))
    ax.set_yticks([0, 1], ["all-reduce", "compute"])
    ax.set_ylim(-1.1, 1.7)
    ax.set_xlim(0, 11.5)
    ax.set_xlabel("time (schematic units)")
    ax.set_title("One DDP step on one rank (schematic)")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def sampler_deal(shares: list[list[int]]) -> Figure:
    """The dataset's positions as a strip, each coloured by the rank that ``DistributedSampler`` gave it."""
    import matplotlib.pyplot as plt

    n = sum(len(s) for s in shares)
    fig, ax = plt.subplots(figsize=(8, 1.3 + 0.3 * len(shares)))
    for rank, indices in enumerate(shares):
        for i in indices:
            ax.barh(0, 1, left=i, color=f"C{rank}", edgecolor="white")
            ax.text(i + 0.5, 0, str(i), ha="center", va="center", fontsize=8, color="white")
    ax.set_xlim(0, n)
    ax.set_yticks([])
    ax.set_xlabel("sample index in the dataset")
    handles = [plt.Rectangle((0, 0), 1, 1, fc=f"C{r}") for r in range(len(shares))]
    ax.legend(handles, [f"rank {r}" for r in range(len(shares))], ncol=len(shares), loc="lower center",
              bbox_to_anchor=(0.5, 1.0), frameon=False)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig
