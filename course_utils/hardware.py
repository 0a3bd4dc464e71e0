"""GPU spec-sheet figures and two small state helpers for benchmarking.

The figures are the vendor's peak numbers (boost clock, no thermal or power limits), used as the
denominator of "% of peak". Every ``GpuSpec`` names where its figures come from.
TF32 switches: since PyTorch 2.9 the documented API is ``torch.backends.cuda.matmul.fp32_precision`` and
``torch.backends.cudnn.conv.fp32_precision`` (``"ieee"`` or ``"tf32"``); the legacy ``allow_tf32`` flags and
``torch.set_float32_matmul_precision`` still work, but *reading* a legacy flag after the new API set a
precision raises a RuntimeError ("mix of the legacy and new APIs"). :func:`tf32_enabled` therefore uses the
new API where this torch has it and the legacy flags only on older releases. See
https://docs.pytorch.org/docs/2.9/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices
Used by: notebook 04 (GPU hardware and benchmarks).
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

# A MIG slice ("NVIDIA H100 80GB HBM3 MIG 1g.10gb") has a fraction of the SMs and of the memory bandwidth,
# so no full-chip datasheet figure applies to it, whatever the chip.
_NEVER_MATCH = r"\bMIG\b"


def find_spec(device_name: str) -> GpuSpec | None:
    """The spec whose ``match`` fits ``device_name`` (e.g. ``'NVIDIA H200'``), or ``None``.

    Parts that share a name stem but differ in clocks or memory (H200 NVL, H100 PCIe, laptop
    chips) and MIG slices of any GPU are not matched: better no "% of peak" than a wrong one.
    Used by: notebook 04.
    """
    if re.search(_NEVER_MATCH, device_name, re.I):
        return None
    for spec in GPU_SPECS:
        if re.search(spec.match, device_name, re.I) and not (spec.exclude and re.search(spec.exclude, device_name, re.I)):
            return spec
    return None


def stream_buffer_mib(requested_mib: int, free_bytes: int, total_bytes: int, *, n_buffers: int = 3,
                      max_fraction: float = 0.5) -> int:
    """MiB per buffer for a bandwidth test with ``n_buffers`` equal buffers, sized to fit this device.

    Returns ``requested_mib``, or less so that all buffers together take at most ``max_fraction`` of
    ``free_bytes`` (pass ``torch.cuda.mem_get_info()``: free and total bytes). A fixed 4 GiB x 3 would
    not fit a 12 GB card that the desktop already uses; half of the free memory leaves room for
    the CUDA context, cuBLAS workspaces and whatever else the process holds. Pure, so it is tested
    with made-up free/total figures. Raises ``ValueError`` for impossible inputs or when even 1 MiB
    per buffer does not fit. Used by: notebook 04.
    """
    if requested_mib < 1 or n_buffers < 1 or not 0 < max_fraction <= 1:
        raise ValueError(f"need requested_mib >= 1, n_buffers >= 1, 0 < max_fraction <= 1; got "
                         f"{requested_mib}, {n_buffers}, {max_fraction}")
    if not 0 <= free_bytes <= total_bytes:
        raise ValueError(f"free memory ({free_bytes} B) must be between 0 and the total ({total_bytes} B)")
    fitting = int(free_bytes * max_fraction) // (n_buffers * 2**20)
    if fitting < 1:
        raise ValueError(f"only {free_bytes / 2**20:.0f} MiB free: not enough for {n_buffers} buffers of 1 MiB")
    return min(requested_mib, fitting)


HAS_FP32_PRECISION_API: bool = hasattr(torch.backends.cuda.matmul, "fp32_precision")


@contextmanager
def tf32_enabled(enabled: bool) -> Iterator[None]:
    """Run a block with TF32 tensor cores allowed (``True``) or not for float32 matmuls and cuDNN
    convolutions, then restore the previous settings.

    Uses ``torch.backends.cuda.matmul.fp32_precision`` and ``torch.backends.cudnn.conv.fp32_precision``
    (``"tf32"`` / ``"ieee"``) where this torch has them (the documented API since 2.9), else the legacy
    ``allow_tf32`` flags; it never mixes the two, because reading a legacy flag after the new API set a
    precision raises. Only NVIDIA GPUs from Ampere on have TF32; elsewhere the flag changes nothing.
    Used by: notebook 04.
    """
    if HAS_FP32_PRECISION_API:
        matmul, conv = torch.backends.cuda.matmul, torch.backends.cudnn.conv
        before = (matmul.fp32_precision, conv.fp32_precision)
        matmul.fp32_precision = conv.fp32_precision = "tf32" if enabled else "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision, conv.fp32_precision = before
        return
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = bool(enabled)
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


@contextmanager
def float32_matmul_precision(precision: str) -> Iterator[None]:
    """The older spelling of :func:`tf32_enabled`, kept for code that uses it: ``"highest"`` is
    ``tf32_enabled(False)`` (full FP32), ``"high"`` is ``tf32_enabled(True)``.

    ``"medium"`` (bf16 inside float32 matmuls) has no CUDA setting in the new API, so it is refused.
    """
    if precision not in ("highest", "high"):
        raise ValueError(f"precision must be 'highest' or 'high' (use tf32_enabled), got {precision!r}")
    with tf32_enabled(precision == "high"):
        yield

