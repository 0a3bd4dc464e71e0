"""Lesson 07's sizes on a GPU: the deep model grows with the card, as far as its free memory allows.

Why: on a GPU the lesson's CPU-sized model (24 blocks of 128 features, batch 1024) is so small that
launch overhead hides the trade-off; scaling width and batch by up to ``gpu_scale`` makes activations
and recomputation visible. Kept out of the lesson's view: it is sizing, not checkpointing.
"""
from __future__ import annotations

import torch


def gpu_scaled(device: torch.device, depth: int, width: int, batch: int, gpu_scale: int) -> tuple[int, int, str]:
    """``(width, batch, reason)``: unchanged off CUDA; on CUDA multiplied by the largest power of two up to
    ``gpu_scale`` whose plain training step fits the free memory (fp32 weights, gradients and two AdamW
    states: 16 bytes per parameter; each block's Linear and ReLU outputs: 8 bytes per value)."""
    if torch.device(device).type != "cuda":
        return width, batch, ""
    from .gpu_choice import pick_size, props_of

    def plain_step_bytes(s: int) -> int:
        return 16 * depth * (width * s) ** 2 + 8 * depth * (batch * s) * (width * s)

    scale = pick_size([k for k in (1, 2, 4, 8, 16, 32, 64) if k < gpu_scale] + [gpu_scale], plain_step_bytes,
                      props_of(device).free_bytes, what="GPU scale")
    return width * scale.size, batch * scale.size, scale.reason
