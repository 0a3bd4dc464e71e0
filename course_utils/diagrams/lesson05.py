"""Lesson 05's picture: bytes per parameter as stacked bars, and one training step of real model sizes
in GiB against the memory GPUs report (the cards as horizontal lines).

Used by: notebook 05. The lesson passes this run's numbers: the bytes
per parameter of its table and the estimator's breakdown of each model's peak; the card lines are the
memory the course's GPU results cards measured, then published ``nvidia-smi`` totals.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

PARTS = ("weights", "gradients", "optimizer state", "activations and temporaries")
COLORS = ("#4c8cc9", "#f2a93b", "#6aa84f", "#bbbbbb")


def bytes_per_parameter_bars(per_param: dict[str, tuple[float, float, float]],
                             models: dict[str, dict[str, float]], cards: dict[str, float]) -> Figure:
    """Left: bytes per parameter, ``{label: (weights, gradients, optimizer state)}``, stacked.
    Right: one training step of each model in GiB, ``{label: {part: GiB}}`` with the keys of
    :data:`PARTS`, stacked, with a dashed horizontal line per card (``{label: GiB}``)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 1.25]})
    labels = list(per_param)
    bottom = [0.0] * len(labels)
    for i, (part, color) in enumerate(zip(PARTS[:3], COLORS)):
        heights = [per_param[k][i] for k in labels]
        left.bar(labels, heights, bottom=bottom, color=color, label=part)
        for x, (b, h) in enumerate(zip(bottom, heights)):
            if h:
                left.text(x, b + h / 2, f"{h:g}", ha="center", va="center", fontsize=9)
        bottom = [b + h for b, h in zip(bottom, heights)]
    for x, total in enumerate(bottom):
        left.text(x, total + 0.3, f"{total:g} B", ha="center", va="bottom", fontsize=9, weight="bold")
    left.set_title("Bytes per parameter")
    left.set_ylabel("bytes per parameter (B)")
    left.set_ylim(0, max(bottom) * 1.2)
    left.tick_params(axis="x", labelsize=8)
    left.legend(fontsize=8, loc="upper left")

    names = list(models)
    bottom = [0.0] * len(names)
    for part, color in zip(PARTS, COLORS):
        heights = [models[m].get(part, 0.0) for m in names]
        right.bar(names, heights, bottom=bottom, color=color, label=part)
        bottom = [b + h for b, h in zip(bottom, heights)]
    for x, total in enumerate(bottom):
        right.text(x, total, f"{total:.1f} GiB", ha="center", va="bottom", fontsize=9, weight="bold")
    for i, (card, gib) in enumerate(sorted(cards.items(), key=lambda kv: kv[1])):
        right.axhline(gib, color="black", ls="--", lw=1)
        right.text(len(names) - 0.5, gib, f" {card}: {gib:.1f} GiB", va="bottom", ha="right", fontsize=8)
    right.set_title("One training step (fp32, AdamW): the estimate vs the cards")
    right.set_ylabel("memory (GiB, 2^30 bytes)")
    right.set_xlabel("model (parameters)")
    right.set_ylim(0, max(bottom + list(cards.values())) * 1.12)
    fig.tight_layout()
    return fig
