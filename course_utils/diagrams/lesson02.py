"""Lesson 02's pictures: the GPU-vs-CPU headline, the CPU's queue of launches beside the GPU's
timeline, and one iris epoch as a stacked bar.

Each function returns a matplotlib figure; the lesson ends the cell with ``finish(fig)``
(``course_utils.plotting``), so the figure is drawn once. Numbers a picture shows are arguments:
the lesson passes this run's measurements (or, for the launch queue, says which ones are assumed).
Lesson 10 reuses :func:`launch_queue` when it retells the ``.item()`` story.
"""
from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..plotting import new_figure

# The one GPU-vs-CPU iris time a reader of the "GPU training" post published, with the page it is on.
# It is a learner's report, not a measurement of the course (docs/sources.md).
LEARNER_SOURCE = "http://www.dtcms.com/a/400739.html"
LEARNER = ("learner's laptop, i7-1255U", 19.09, 21.23)

CPU_COLOUR, GPU_COLOUR = "#4c72b0", "#dd8452"
PART_COLOURS = ("#4c72b0", "#55a868", "#c44e52", "#8172b2", "#ccb974")


@dataclass(frozen=True)
class Machine:
    """One machine's 20,000-epoch iris run: CPU seconds, GPU seconds, and where the figures come from."""

    label: str
    cpu_s: float
    gpu_s: float
    kind: str          # "course card" (a results card in results/) or "published" (someone else's report)
    source: str


def headline_machines() -> list[Machine]:
    """Every iris CPU-vs-GPU pair the course can show without a GPU here: each GPU results card in
    ``results/`` (h200.json or a contributed card, found at run time, so a new card appears by
    itself), the published figures of ``course_utils.published`` for the same keys, and the
    learner's laptop. Why a function: the first screen of lesson 02 must stay right as cards arrive."""
    from .. import published
    from ..ledger import gpu_card_results, references

    machines = []
    cards = references()
    for name, ref in gpu_card_results().items():
        if "iris.cpu_seconds" in ref and "iris.dev_seconds" in ref:
            device = cards[name].get("device", name)
            machines.append(Machine(f"{device} (card {name})", ref["iris.cpu_seconds"].value,
                                    ref["iris.dev_seconds"].value, "course card", f"results/{name}.json"))
    cpu_pub = {f.device: f for f in published.figures("iris.cpu_seconds")}
    for gpu in published.figures("iris.dev_seconds"):
        if gpu.device in cpu_pub:
            machines.append(Machine(gpu.device, cpu_pub[gpu.device].value, gpu.value, "published", gpu.source))
    machines.append(Machine(LEARNER[0], LEARNER[1], LEARNER[2], "published", LEARNER_SOURCE))
    return machines


def headline(machines: list[Machine]) -> Figure:
    """Horizontal bars, two per machine: seconds for the 20,000 iris epochs on its CPU and on its GPU
    (``loss.item()`` every epoch). Each label says whether the pair is a course card or published."""
    fig, ax = new_figure("Iris, 20,000 epochs: CPU vs GPU on other machines", "seconds (shorter is faster)",
                         "machine", figsize=(7.0, 1.4 + 0.9 * len(machines)))
    names = []
    for i, m in enumerate(reversed(machines)):
        y = 2.5 * i
        for dy, secs, colour, what in ((0.5, m.cpu_s, CPU_COLOUR, "CPU"), (-0.5, m.gpu_s, GPU_COLOUR, "GPU")):
            ax.barh(y + dy, secs, height=0.9, color=colour)
            ax.text(secs, y + dy, f" {what} {secs:.2f} s", va="center", fontsize=9)
        names.append((y, f"{m.label}\n({m.kind})"))
    ax.set_yticks([y for y, _ in names], [n for _, n in names], fontsize=9)
    ax.set_xlim(0, 1.35 * max(max(m.cpu_s, m.gpu_s) for m in machines))
    # no legend: each bar says CPU or GPU at its end, where a legend box would cover a label
    ax.grid(axis="y", visible=False)
    return fig


def launch_queue(host_us: float = 12.0, launch_us: float = 5.0, kernel_us: float = 3.0, sync_us: float = 10.0,
                 ops: int = 4, steps: int = 2, item: bool = True) -> Figure:
    """Two timelines of a tiny training loop on a GPU: the CPU (top) and the GPU (bottom).

    Per operation the CPU spends ``host_us`` (Python, the dispatcher, autograd) and ``launch_us`` to
    queue a kernel; the GPU runs each kernel for ``kernel_us`` as soon as it is queued and idles in
    between. With ``item=True`` each of the ``steps`` ends with ``loss.item()``: the CPU waits for
    the last kernel, then for the copy back (``sync_us``); with ``item=False`` it goes on queueing.
    All times in microseconds; the picture is drawn to the scale of these arguments.
    """
    fig, ax = new_figure("A tiny training loop on a GPU: who waits for whom", "time (us)", "who is working",
                         figsize=(9.0, 2.8))
    cpu_y, gpu_y, h = 1.0, 0.0, 0.6
    t, gpu_free, waits = 0.0, 0.0, []
    for _ in range(steps):
        for _ in range(ops):
            ax.broken_barh([(t, host_us)], (cpu_y - h / 2, h), color="#bbbbbb")
            ax.broken_barh([(t + host_us, launch_us)], (cpu_y - h / 2, h), color=GPU_COLOUR)
            t += host_us + launch_us
            start = max(t, gpu_free)
            ax.broken_barh([(start, kernel_us)], (gpu_y - h / 2, h), color="#55a868")
            gpu_free = start + kernel_us
        if item:
            waits.append((t, gpu_free + sync_us - t))
            ax.broken_barh([waits[-1]], (cpu_y - h / 2, h), color="#c44e52", hatch="//", alpha=0.8)
            t = gpu_free + sync_us
    end = max(t, gpu_free)
    ax.set_xlim(0, end * 1.02)
    ax.set_ylim(-0.7, 1.9)
    ax.set_yticks([gpu_y, cpu_y], ["GPU", "CPU"])
    ax.grid(axis="y", visible=False)
    if waits:
        ax.annotate("loss.item(): the CPU waits", xy=(waits[0][0] + waits[0][1] / 2, cpu_y + h / 2),
                    xytext=(waits[0][0], cpu_y + 0.75), fontsize=9, arrowprops={"arrowstyle": "->"})
    ax.text(end * 0.01, gpu_y + 0.42, "white = the GPU is idle, waiting for the next launch", fontsize=8)
    ax.legend(handles=[Patch(color="#bbbbbb", label="CPU: Python, dispatcher, autograd"),
                       Patch(color=GPU_COLOUR, label="CPU: launch a kernel"),
                       Patch(color="#55a868", label="GPU: run the kernel"),
                       *([Patch(color="#c44e52", label="CPU: wait + copy back")] if item else [])],
              loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, fontsize=8)
    return fig


def epoch_bar(parts_us: dict[str, float], arithmetic_us: float, epoch_us: float | None = None) -> Figure:
    """One iris epoch as a stacked bar of its measured parts (microseconds), beside the time its
    arithmetic would take at the device's measured matmul rate, and, if given, a whole epoch measured
    as one. The arithmetic bar is too thin to see, so its value is written beside it."""
    fig, ax = new_figure("Where one iris epoch goes", "time (us)", "what is timed", figsize=(8.0, 2.8))
    rows = {"parts of one step": 2.0, "the arithmetic": 1.0}
    left, handles = 0.0, []
    for (part, us), colour in zip(parts_us.items(), PART_COLOURS * 2):
        ax.barh(rows["parts of one step"], us, left=left, height=0.6, color=colour)
        handles.append(Patch(color=colour, label=f"{part} {us:.0f} us"))
        if us > 0.07 * sum(parts_us.values()):
            ax.text(left + us / 2, rows["parts of one step"], part, ha="center", va="center", fontsize=8, color="white")
        left += us
    ax.barh(rows["the arithmetic"], arithmetic_us, height=0.6, color="black")
    ax.text(arithmetic_us, rows["the arithmetic"], f"  {arithmetic_us:.2f} us of matmul arithmetic", va="center", fontsize=9)
    if epoch_us is not None:
        rows["a whole epoch"] = 0.0
        ax.barh(0.0, epoch_us, height=0.6, color="#999999")
        ax.text(epoch_us, 0.0, f"  {epoch_us:.0f} us", va="center", fontsize=9)
    ax.set_yticks(list(rows.values()), list(rows))
    ax.set_xlim(0, 1.25 * max(left, epoch_us or 0.0))
    ax.grid(axis="y", visible=False)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=5, fontsize=8)
    return fig


def card_sweeps(tag: str = "h") -> dict[str, tuple[list[int], list[float]]]:
    """The size sweep of every GPU results card in ``results/``, by plot label: ``tag`` "h" for the
    hidden-width sweep, "b" for the batch sweep. Each value is (sizes, ms per step); the card's GPU
    and its own CPU are separate curves. Empty while no GPU card is shipped."""
    from ..ledger import gpu_card_results

    curves = {}
    for name, ref in gpu_card_results().items():
        for side, what in (("dev", "GPU"), ("cpu", "CPU")):
            prefix = f"iris.sweep_{side}_ms_{tag}"
            pts = sorted((int(k[len(prefix):]), r.value) for k, r in ref.items()
                         if k.startswith(prefix) and k[len(prefix):].isdigit())
            if pts:
                curves[f"card {name}, {what}"] = ([p[0] for p in pts], [p[1] for p in pts])
    return curves
