"""Lesson 06's picture: the bits of the four number formats of training (fp32, TF32, bf16, fp16).

Used by: notebook 06. The range and precision printed beside each row come
from ``torch.finfo`` (TF32 has no dtype: its row is fp32's exponent with fp16's mantissa), so the
picture cannot disagree with the numbers the lesson measures.
"""
from __future__ import annotations

import math

import torch
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

COLORS = {"sign": "#e0e0e0", "exponent": "#f2a93b", "mantissa": "#4c8cc9"}

# name, (sign, exponent, mantissa) bits, finfo dtype (None: TF32, fp32's exponent and a 10-bit mantissa)
FORMATS = (("fp32", (1, 8, 23), torch.float32), ("TF32", (1, 8, 10), None),
           ("bf16", (1, 8, 7), torch.bfloat16), ("fp16", (1, 5, 10), torch.float16))


def _facts(dtype: torch.dtype | None) -> str:
    """'max 3.4e+38, smallest 1.4e-45, 7.2 digits' from torch.finfo (smallest: the smallest subnormal)."""
    fi = torch.finfo(dtype or torch.float32)
    eps = fi.eps if dtype is not None else 2.0**-10
    smallest = fi.smallest_normal * eps
    digits = (1 - math.log2(eps)) * math.log10(2)  # significant bits (stored + the implicit 1) in decimal digits
    where = "in matmuls only" if dtype is None else f"smallest {smallest:.0e}"
    return f"max {fi.max:.0e}, {where}, ~{digits:.1f} digits"


def bit_layouts() -> Figure:
    """One row per format: a box per bit, grey sign, orange exponent (the range), blue mantissa (the
    precision), with max, smallest value and significant decimal digits on the right."""
    fig, ax = plt.subplots(figsize=(10, 3.4))  # a pyplot figure: the lesson ends its cell with finish(fig)
    ax.set_xlim(-10, 52)
    ax.set_ylim(-0.9, len(FORMATS) * 1.0 + 0.4)
    ax.axis("off")
    for row, (name, bits, dtype) in enumerate(FORMATS):
        y = (len(FORMATS) - 1 - row) * 1.0
        ax.text(-0.6, y + 0.3, f"{name}  ({sum(bits)} bits)", ha="right", va="center", fontsize=10, weight="bold")
        x = 0.0
        for part, n in zip(("sign", "exponent", "mantissa"), bits):
            for _ in range(n):
                ax.add_patch(Rectangle((x, y), 0.9, 0.6, facecolor=COLORS[part], edgecolor="white", lw=0.5))
                x += 1.0
            ax.text(x - n / 2 - 0.05, y + 0.3, str(n) if n > 1 else "", ha="center", va="center", fontsize=8,
                    color="white" if part == "mantissa" else "black")
        ax.text(33.5, y + 0.3, _facts(dtype), ha="left", va="center", fontsize=9)
    for i, (part, color) in enumerate(COLORS.items()):
        ax.add_patch(Rectangle((i * 11.0, -0.75), 0.9, 0.45, facecolor=color))
        meaning = {"sign": "sign (+ or -)", "exponent": "exponent: the range", "mantissa": "mantissa: the precision"}[part]
        ax.text(i * 11.0 + 1.3, -0.52, meaning, va="center", fontsize=9)
    return fig
