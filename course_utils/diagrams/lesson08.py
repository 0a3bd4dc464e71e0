"""Lesson 08's pictures: who prepares which batch, and when the training step waits for it."""
from __future__ import annotations

from matplotlib.figure import Figure

PREPARE, TRAIN, WAIT = "#f4a582", "#92c5de", "#eeeeee"


def loader_schedule(prepare_ms: float, train_ms: float, workers: int, batches: int) -> list[tuple[str, float, float, str]]:
    """The ideal timeline of ``batches`` training steps: ``(row, start_ms, length_ms, kind)`` bars.

    With 0 workers the main process prepares a batch, then trains on it, one after the other. With
    N workers, worker ``i`` prepares batches ``i, i + N, ...`` back to back, and the main process trains
    on batch ``k`` as soon as it is ready and the previous step is done. Ideal means every worker has a
    free core of its own (real machines with few cores fall short of it: lesson 08 measures by how much).
    """
    bars: list[tuple[str, float, float, str]] = []
    if workers == 0:
        t = 0.0
        for _ in range(batches):
            bars += [("main", t, prepare_ms, "prepare"), ("main", t + prepare_ms, train_ms, "train")]
            t += prepare_ms + train_ms
        return bars
    ready = []
    for k in range(batches):
        start = (k // workers) * prepare_ms
        bars.append((f"worker {k % workers + 1}", start, prepare_ms, "prepare"))
        ready.append(start + prepare_ms)
    t = 0.0
    for k in range(batches):
        start = max(t, ready[k])
        if start > t:
            bars.append(("main", t, start - t, "wait"))
        bars.append(("main", start, train_ms, "train"))
        t = start + train_ms
    return bars


def loader_timeline(prepare_ms: float, train_ms: float, workers: int = 2, batches: int = 6) -> Figure:
    """Two timelines one above the other: 0 workers, then ``workers`` workers, for this run's
    per-batch preparation and training times. Numbers in the boxes are batch numbers."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(9, 1.2 + 0.55 * (workers + 3)), sharex=True,
                             gridspec_kw={"height_ratios": [1, workers + 1]})
    colors = {"prepare": PREPARE, "train": TRAIN, "wait": WAIT}
    end = 0.0
    for ax, n in zip(axes, (0, workers)):
        rows = ["main"] + [f"worker {i + 1}" for i in range(n)]
        seen: dict[str, int] = {}
        for row, start, length, kind in loader_schedule(prepare_ms, train_ms, n, batches):
            y = rows.index(row)
            ax.barh(y, length, left=start, color=colors[kind], edgecolor="0.35", hatch="//" if kind == "wait" else None)
            if kind != "wait":
                seen[kind] = seen.get(kind, 0) + 1
                ax.text(start + length / 2, y, str(seen[kind]), ha="center", va="center", fontsize=8)
            else:
                seen.setdefault("wait", 0)
            end = max(end, start + length)
        ax.set_yticks(range(len(rows)), ["main process" if r == "main" else r for r in rows])
        ax.invert_yaxis()
        ax.set_title(f"num_workers={n}" + (": prepare, then train, one after the other" if n == 0 else
                                           f": {n} workers prepare the next batches while the main process trains"),
                     fontsize=10, loc="left")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[1].set_xlabel("time (ms; this run's times per batch, with a free core for every worker)")
    handles = [plt.Rectangle((0, 0), 1, 1, fc=PREPARE, ec="0.35"), plt.Rectangle((0, 0), 1, 1, fc=TRAIN, ec="0.35"),
               plt.Rectangle((0, 0), 1, 1, fc=WAIT, ec="0.35", hatch="//")]
    axes[0].legend(handles, ["prepare a batch", "train on it", "main process waits"], ncol=3, loc="lower right",
                   bbox_to_anchor=(1.0, 1.25), frameon=False, fontsize=8)
    axes[0].set_xlim(0, end * 1.02)
    fig.tight_layout()
    return fig
