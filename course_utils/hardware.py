"""GPU spec-sheet figures and two small state helpers for benchmarking.

The figures are the vendor's peak numbers (boost clock, no thermal or power limits), used as the
denominator of "% of peak". Every ``GpuSpec`` names where its figures come from.
Used by: notebook 04_gpu_hardware_and_benchmarks.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import torch


@dataclass(frozen=True)
class GpuSpec:
    """Peak figures of one GPU model (TFLOP/s = 1e12 floating-point operations per second).

    ``bf16_tflops`` is the *dense* BF16/FP16 tensor-core rate with FP32 accumulation (what PyTorch's
    matmuls use); ``bf16_sparse_tflops`` is the 2:4 structured-sparsity headline, twice the dense
    rate. ``fp16_acc16_tflops`` is the dense FP16 rate with FP16 accumulation where the vendor
    quotes a faster one (GeForce cards); ``None`` where it equals ``bf16_tflops``.
    """

    name: str
    architecture: str
    fp32_tflops: float  # FP32 on the ordinary CUDA cores (no tensor cores)
    tf32_tflops: float  # dense TF32 on tensor cores
    bf16_tflops: float  # dense BF16/FP16 on tensor cores, FP32 accumulate
    bf16_sparse_tflops: float  # with 2:4 structured sparsity (the marketing headline)
    fp16_acc16_tflops: float | None
    memory_gb: float  # decimal GB, as the datasheet writes it
    bandwidth_tbs: float  # device memory bandwidth, TB/s (1e12 bytes/s)
    source: str
    match: str  # regex that torch.cuda.get_device_name() of this model matches
    exclude: str = ""  # regex of names that contain ``match`` but are another part

    @property
    def ridge_flop_per_byte(self) -> float:
        """Dense BF16 FLOP per byte of memory traffic at which compute and bandwidth take equal time."""
        return self.bf16_tflops / self.bandwidth_tbs


GPU_SPECS: tuple[GpuSpec, ...] = (
    GpuSpec(
        "RTX 3080 Ti", "Ampere (GA102)", 34.1, 34.1, 68.2, 136.4, 136.4, 12, 0.912,
        "NVIDIA GA102 whitepaper v2 (per-SM tensor rates), "
        "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf, "
        "with the RTX 3080 Ti's 80 SMs and 1.665 GHz boost clock from "
        "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3080-3080ti/ "
        "(derived: the whitepaper's tables predate this card)",
        r"RTX 3080 Ti\b", r"Laptop",
    ),
    GpuSpec(
        "RTX 4090", "Ada Lovelace (AD102)", 82.6, 82.6, 165.2, 330.4, 330.3, 24, 1.008,
        "NVIDIA Ada GPU architecture whitepaper, appendix A, "
        "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
        r"RTX 4090\b", r"Laptop|4090 D",
    ),
    GpuSpec(
        "A100 80GB SXM", "Ampere (GA100)", 19.5, 156.0, 312.0, 624.0, None, 80, 2.039,
        "NVIDIA A100 datasheet, https://www.nvidia.com/en-us/data-center/a100/",
        r"A100.*SXM.*80GB",
    ),
    GpuSpec(
        "H100 SXM", "Hopper (GH100)", 67.0, 494.5, 989.0, 1979.0, None, 80, 3.35,
        "NVIDIA H100 datasheet, https://www.nvidia.com/en-us/data-center/h100/",
        r"H100.*(SXM|HBM3)", r"PCIe|NVL",
    ),
    GpuSpec(
        "H200 SXM", "Hopper (GH100)", 67.0, 494.5, 989.0, 1979.0, None, 141, 4.8,
        "NVIDIA H200 datasheet, https://www.nvidia.com/en-us/data-center/h200/",
        r"\bH200\b", r"NVL|PCIe",
    ),
)


def find_spec(device_name: str) -> GpuSpec | None:
    """The spec whose ``match`` fits ``device_name`` (e.g. ``'NVIDIA H200'``), or ``None``.

    Parts that share a name stem but differ in clocks or memory (H200 NVL, H100 PCIe, laptop
    chips) are not matched: better no "% of peak" than a wrong one. Used by: notebook 04.
    """
    for spec in GPU_SPECS:
        if re.search(spec.match, device_name, re.I) and not (spec.exclude and re.search(spec.exclude, device_name, re.I)):
            return spec
    return None


@contextmanager
def float32_matmul_precision(precision: str) -> Iterator[None]:
    """Run a block with ``torch.set_float32_matmul_precision(precision)``, then restore the old value.

    ``"highest"``: float32 matmuls in full FP32; ``"high"``: TF32 tensor cores allowed on NVIDIA
    Ampere and later. Only this one API is used: recent PyTorch raises an error when reading a TF32
    flag after the legacy ``allow_tf32`` and the newer ``fp32_precision`` settings were mixed.
    Used by: notebook 04.
    """
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"precision must be 'highest', 'high' or 'medium', got {precision!r}")
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run a block with ``torch.set_num_threads(n)``, then restore the previous thread count.

    Used by: notebook 04 (1-thread vs 2-thread matmul).
    """
    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
