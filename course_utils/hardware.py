"""GPU spec-sheet figures and two small state helpers for benchmarking.

The figures are the vendor's peak numbers (boost clock, no thermal or power limits), used as the
denominator of "% of peak". Every ``GpuSpec`` names where its figures come from; where a figure is
derived (SM count x per-SM rate x boost clock, for cards whose whitepaper has no table of their own),
the source says so. ``GPU_SPECS`` holds the five cards lesson 04 compares; ``BORROWED_SPECS`` the cards
students meet on Colab, Kaggle, cloud and lab machines (T4, P100, V100, L4, A10/A10G, A100, GeForce RTX
30/40/50, H100 PCIe/NVL, H200 NVL); :func:`find_spec` searches both (``ALL_GPU_SPECS``).

Memory sizes: ``memory_gb`` is the datasheet's "GB", and for NVIDIA's HBM and GDDR cards that figure
counts binary units (GiB, 2**30 bytes): nvidia-smi shows an "80 GB" A100 as 81,920 MiB. A process sees
less than that: the driver keeps some, and a GDDR card with ECC on stores the ECC bits in 6.25 % of its
DRAM (a 16 GB T4 shows about 15,079 MiB; NVIDIA's CUDA C++ Best Practices Guide, "ECC"). The H200 NVL has
the same 141 GB at 4.8 TB/s as the H200 SXM; it differs in power (600 W vs 700 W), clocks and FLOP/s.

CUDA builds of PyTorch and old cards: from PyTorch 2.11 the default wheels (CUDA 13.0 on PyPI, and the
CUDA 12.8 build) carry kernels for compute capability 7.5 (Turing) and newer only; the CUDA 12.6 build
still has Maxwell 5.0, Pascal 6.0 and Volta 7.0 (PyTorch's RELEASE.md support matrix for 2.11,
https://github.com/pytorch/pytorch/blob/main/RELEASE.md#pytorch-cuda-support-matrix, and
https://dev-discuss.pytorch.org/t/dropping-volta-support-from-cuda-12-8-binaries-for-release-2-11/3290).
So a P100 (6.0) or a V100 (7.0) needs the cu126 wheels (https://download.pytorch.org/whl/cu126);
``course_utils.gpu_choice.kernel_support`` reads the build's arch list and says so.
TF32 switches: since PyTorch 2.9 the documented API is ``torch.backends.cuda.matmul.fp32_precision`` and
``torch.backends.cudnn.conv.fp32_precision`` (``"ieee"`` or ``"tf32"``); the legacy ``allow_tf32`` flags and
``torch.set_float32_matmul_precision`` still work, but *reading* a legacy flag after the new API set a
precision raises a RuntimeError ("mix of the legacy and new APIs"). :func:`tf32_enabled` therefore uses the
new API where this torch has it and the legacy flags only on older releases. See
https://docs.pytorch.org/docs/2.9/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices
Used by: notebooks 02, 04, 10 and course_utils.gpu_choice.
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
    ``None`` also marks what a card does not have: no TF32 (before Ampere), no BF16 tensor cores
    (T4, V100, P100: ``fp16_tflops`` then holds the FP16 peak), no 2:4 sparsity (before Ampere), or no
    published figure (A10G: NVIDIA publishes no datasheet for it). ``capability`` is CUDA's (major, minor).
    """

    name: str
    architecture: str
    fp32_tflops: float | None  # FP32 on the ordinary CUDA cores (no tensor cores)
    tf32_tflops: float | None  # dense TF32 on tensor cores
    bf16_tflops: float | None  # dense BF16/FP16 on tensor cores, FP32 accumulate
    bf16_sparse_tflops: float | None  # with 2:4 structured sparsity (the marketing headline)
    fp16_acc16_tflops: float | None
    memory_gb: float  # the datasheet's GB: binary GiB on NVIDIA's cards (see the module docstring)
    bandwidth_tbs: float | None  # device memory bandwidth, TB/s (1e12 bytes/s)
    source: str
    match: str  # regex that torch.cuda.get_device_name() of this model matches
    exclude: str = ""  # regex of names that contain ``match`` but are another part
    capability: tuple[int, int] | None = None
    fp16_tflops: float | None = None  # dense FP16 peak where it differs from bf16_tflops (no BF16 tensor cores)
    memory_type: str = ""

    @property
    def half_tflops(self) -> float | None:
        """The dense 16-bit peak PyTorch's matmuls can reach: FP16 where there is no BF16, else BF16."""
        return self.fp16_tflops if self.fp16_tflops is not None else self.bf16_tflops

    @property
    def ridge_flop_per_byte(self) -> float | None:
        """Dense 16-bit FLOP per byte of memory traffic at which compute and bandwidth take equal time."""
        if self.half_tflops is None or not self.bandwidth_tbs:
            return None
        return self.half_tflops / self.bandwidth_tbs


GPU_SPECS: tuple[GpuSpec, ...] = (
    GpuSpec(
        "RTX 3080 Ti", "Ampere (GA102)", 34.1, 34.1, 68.2, 136.4, 136.4, 12, 0.912,
        "NVIDIA GA102 whitepaper v2 (per-SM tensor rates), "
        "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf, "
        "with the RTX 3080 Ti's 80 SMs and 1.665 GHz boost clock from "
        "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3080-3080ti/ "
        "(derived: the whitepaper's tables predate this card)",
        r"RTX 3080 Ti\b", r"Laptop", capability=(8, 6), memory_type="GDDR6X",
    ),
    GpuSpec(
        "RTX 4090", "Ada Lovelace (AD102)", 82.6, 82.6, 165.2, 330.4, 330.3, 24, 1.008,
        "NVIDIA Ada GPU architecture whitepaper, appendix A, "
        "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
        r"RTX 4090\b", r"Laptop|4090 D", capability=(8, 9), memory_type="GDDR6X",
    ),
    GpuSpec(
        "A100 80GB SXM", "Ampere (GA100)", 19.5, 156.0, 312.0, 624.0, None, 80, 2.039,
        "NVIDIA A100 datasheet, https://www.nvidia.com/en-us/data-center/a100/",
        r"A100.*SXM.*80GB", capability=(8, 0), memory_type="HBM2e",
    ),
    GpuSpec(
        "H100 SXM", "Hopper (GH100)", 67.0, 494.5, 989.0, 1979.0, None, 80, 3.35,
        "NVIDIA H100 datasheet, https://www.nvidia.com/en-us/data-center/h100/",
        r"H100.*(SXM|HBM3)", r"PCIe|NVL", capability=(9, 0), memory_type="HBM3",
    ),
    GpuSpec(
        "H200 SXM", "Hopper (GH100)", 67.0, 494.5, 989.0, 1979.0, None, 141, 4.8,
        "NVIDIA H200 datasheet, https://www.nvidia.com/en-us/data-center/h200/",
        r"\bH200\b", r"NVL|PCIe", capability=(9, 0), memory_type="HBM3e",
    ),
)


_GA10X = ("NVIDIA GA102 whitepaper v2, https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf")
_AD10X = ("NVIDIA Ada GPU architecture whitepaper, https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf")
_GB20X = ("NVIDIA RTX Blackwell GPU architecture whitepaper, "
          "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf")


def _geforce(name: str, arch: str, capability: tuple[int, int], sms: int, boost_ghz: float, fp32_cores_per_sm: int,
             memory_gb: float, bandwidth_tbs: float, whitepaper: str, product_page: str, memory_type: str,
             match: str, exclude: str = r"Laptop|Ti\b|SUPER") -> GpuSpec:
    """A GeForce card's peaks from its SM count and boost clock, with the per-SM rates its whitepaper gives.

    Ampere GA10x, Ada AD10x and Blackwell GB20x GeForce SMs all do 512 dense FP16 tensor FLOP per clock
    with FP32 accumulation (1,024 with FP16 accumulation, 2x with 2:4 sparsity) and TF32 at half the
    FP32-accumulate rate; FP32 is 2 FLOP (one FMA) per CUDA core per clock. Where a whitepaper has a
    table for the card, the arithmetic gives its figure (GA102: RTX 3090 71 and RTX 3080 59.5 dense FP16
    TFLOP/s with FP32 accumulation; Ada: RTX 4090 165.2, RTX 4080 97.5), up to rounding.
    """
    tensor = sms * 512 * boost_ghz / 1000
    return GpuSpec(
        name, arch, round(sms * fp32_cores_per_sm * 2 * boost_ghz / 1000, 1), round(tensor / 2, 1),
        round(tensor, 1), round(2 * tensor, 1), round(2 * tensor, 1), memory_gb, bandwidth_tbs,
        f"{whitepaper} (per-SM rates) with the {name}'s {sms} SMs and {boost_ghz} GHz boost clock from {product_page} "
        f"(derived: SMs x rate per SM x boost clock)",
        match, exclude, capability=capability, memory_type=memory_type,
    )


_A100 = ("NVIDIA A100 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
         "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_V100 = ("NVIDIA V100 datasheet, https://images.nvidia.com/content/technologies/volta/pdf/"
         "volta-v100-datasheet-update-us-1165301-r5.pdf")
_P100 = "NVIDIA Tesla P100 PCIe datasheet, https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-PCIe-datasheet.pdf"
_30 = "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/"
_40 = "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/"
_50 = "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/"

BORROWED_SPECS: tuple[GpuSpec, ...] = (
    # Colab's and Kaggle's free GPUs, and the data-centre cards of cloud and lab machines.
    GpuSpec("T4", "Turing (TU104)", 8.1, None, None, None, None, 16, 0.320,
            "NVIDIA T4 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/"
            "t4-tensor-core-datasheet-951643.pdf (65 TFLOP/s is its mixed-precision FP16/FP32 tensor figure)",
            r"\bT4\b", capability=(7, 5), fp16_tflops=65.0, memory_type="GDDR6"),
    GpuSpec("P100 PCIe 16GB", "Pascal (GP100)", 9.3, None, None, None, None, 16, 0.732,
            f"{_P100} (no tensor cores: 18.7 TFLOP/s is FP16 on the CUDA cores, 2x FP32)",
            r"P100.*PCIE.*16GB", capability=(6, 0), fp16_tflops=18.7, memory_type="HBM2"),
    GpuSpec("P100 SXM2", "Pascal (GP100)", 10.6, None, None, None, None, 16, 0.732,
            "NVIDIA Tesla P100 datasheet, https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf "
            "(no tensor cores: 21.2 TFLOP/s is FP16 on the CUDA cores)",
            r"P100.*SXM2", capability=(6, 0), fp16_tflops=21.2, memory_type="HBM2"),
    *(GpuSpec(f"V100 {form} {gb}GB", "Volta (GV100)", fp32, None, None, None, None, gb, 0.900,
              f"{_V100} ({tensor:g} TFLOP/s: its FP16 tensor figure, FP32 accumulate; no BF16)",
              rf"V100-{form.upper()}\d?-{gb}GB", capability=(7, 0), fp16_tflops=tensor, memory_type="HBM2")
      for form, fp32, tensor in (("SXM2", 15.7, 125.0), ("PCIe", 14.0, 112.0)) for gb in (16, 32)),
    GpuSpec("L4", "Ada Lovelace (AD104)", 30.3, 60.0, 121.0, 242.0, None, 24, 0.300,
            "NVIDIA L4 datasheet, https://www.nvidia.com/en-us/data-center/l4/ (TF32 120 and FP16/BF16 242 TFLOP/s "
            "are its 'with sparsity' figures; dense is half)",
            r"\bL4\b", capability=(8, 9), memory_type="GDDR6"),
    GpuSpec("A10", "Ampere (GA102)", 31.2, 62.5, 125.0, 250.0, None, 24, 0.600,
            "NVIDIA A10 datasheet, https://www.nvidia.com/en-us/data-center/products/a10-gpu/",
            r"\bA10\b", capability=(8, 6), memory_type="GDDR6"),
    GpuSpec("A10G", "Ampere (GA102)", None, None, None, None, None, 24, None,
            "AWS EC2 G5 instances, https://aws.amazon.com/ec2/instance-types/g5/ (24 GB per GPU); NVIDIA publishes "
            "no A10G datasheet, so no peak FLOP/s or bandwidth is given here (the A10's are another card's)",
            r"\bA10G\b", capability=(8, 6), memory_type="GDDR6"),
    GpuSpec("A100 40GB SXM", "Ampere (GA100)", 19.5, 156.0, 312.0, 624.0, None, 40, 1.555, _A100,
            r"A100.*SXM.*40GB", capability=(8, 0), memory_type="HBM2"),
    GpuSpec("A100 40GB PCIe", "Ampere (GA100)", 19.5, 156.0, 312.0, 624.0, None, 40, 1.555, _A100,
            r"A100.*PCIE.*40GB", capability=(8, 0), memory_type="HBM2"),
    GpuSpec("A100 80GB PCIe", "Ampere (GA100)", 19.5, 156.0, 312.0, 624.0, None, 80, 1.935, _A100,
            r"A100.*80GB.*PCIe", capability=(8, 0), memory_type="HBM2e"),
    GpuSpec("H100 PCIe", "Hopper (GH100)", 51.0, 378.0, 756.5, 1513.0, None, 80, 2.0,
            "NVIDIA H100 datasheet, https://www.nvidia.com/en-us/data-center/h100/ (TF32 756 and BF16 1,513 TFLOP/s "
            "are its 'with sparsity' figures)",
            r"H100 PCIe", capability=(9, 0), memory_type="HBM2e"),
    GpuSpec("H100 NVL", "Hopper (GH100)", 60.0, 417.5, 835.5, 1671.0, None, 94, 3.9,
            "NVIDIA H100 datasheet, https://www.nvidia.com/en-us/data-center/h100/ (TF32 835 and BF16 1,671 TFLOP/s "
            "are its 'with sparsity' figures)",
            r"H100 NVL", capability=(9, 0), memory_type="HBM3"),
    GpuSpec("H200 NVL", "Hopper (GH100)", 60.0, 417.5, 835.5, 1671.0, None, 141, 4.8,
            "NVIDIA H200 datasheet, https://www.nvidia.com/en-us/data-center/h200/ (same 141 GB and 4.8 TB/s as the "
            "SXM; TF32 835 and BF16 1,671 TFLOP/s are its 'with sparsity' figures)",
            r"H200 NVL", capability=(9, 0), memory_type="HBM3e"),
    # GeForce RTX 30 / 40 / 50 (desktop parts; laptop chips of the same name are slower and not matched).
    _geforce("RTX 3060", "Ampere (GA106)", (8, 6), 28, 1.777, 128, 12, 0.360, _GA10X, _30, "GDDR6", r"RTX 3060\b",
             r"Laptop|Ti\b|8GB"),
    _geforce("RTX 3070", "Ampere (GA104)", (8, 6), 46, 1.725, 128, 8, 0.448, _GA10X, _30, "GDDR6", r"RTX 3070\b"),
    _geforce("RTX 3080", "Ampere (GA102)", (8, 6), 68, 1.710, 128, 10, 0.760, _GA10X, _30, "GDDR6X", r"RTX 3080\b",
             r"Laptop|Ti\b|12GB"),
    _geforce("RTX 3090", "Ampere (GA102)", (8, 6), 82, 1.695, 128, 24, 0.936, _GA10X, _30, "GDDR6X", r"RTX 3090\b"),
    _geforce("RTX 4060", "Ada Lovelace (AD107)", (8, 9), 24, 2.460, 128, 8, 0.272, _AD10X, _40, "GDDR6", r"RTX 4060\b"),
    _geforce("RTX 4060 Ti", "Ada Lovelace (AD106)", (8, 9), 34, 2.535, 128, 8, 0.288, _AD10X, _40, "GDDR6",
             r"RTX 4060 Ti\b", r"Laptop"),
    _geforce("RTX 4070", "Ada Lovelace (AD104)", (8, 9), 46, 2.475, 128, 12, 0.504, _AD10X, _40, "GDDR6X", r"RTX 4070\b"),
    _geforce("RTX 4070 Ti", "Ada Lovelace (AD104)", (8, 9), 60, 2.610, 128, 12, 0.504, _AD10X, _40, "GDDR6X",
             r"RTX 4070 Ti\b", r"Laptop|SUPER"),
    _geforce("RTX 4080", "Ada Lovelace (AD103)", (8, 9), 76, 2.505, 128, 16, 0.717, _AD10X, _40, "GDDR6X", r"RTX 4080\b"),
    _geforce("RTX 5070", "Blackwell (GB205)", (12, 0), 48, 2.512, 128, 12, 0.672, _GB20X, _50, "GDDR7", r"RTX 5070\b"),
    _geforce("RTX 5070 Ti", "Blackwell (GB203)", (12, 0), 70, 2.452, 128, 16, 0.896, _GB20X, _50, "GDDR7",
             r"RTX 5070 Ti\b", r"Laptop"),
    _geforce("RTX 5080", "Blackwell (GB203)", (12, 0), 84, 2.617, 128, 16, 0.960, _GB20X, _50, "GDDR7", r"RTX 5080\b"),
    _geforce("RTX 5090", "Blackwell (GB202)", (12, 0), 170, 2.407, 128, 32, 1.792, _GB20X, _50, "GDDR7",
             r"RTX 5090\b", r"Laptop|5090 D"),
)

ALL_GPU_SPECS: tuple[GpuSpec, ...] = GPU_SPECS + BORROWED_SPECS

# A MIG slice ("NVIDIA H100 80GB HBM3 MIG 1g.10gb") has a fraction of the SMs and of the memory bandwidth,
# so no full-chip datasheet figure applies to it, whatever the chip.
_NEVER_MATCH = r"\bMIG\b"


def find_spec(device_name: str, total_bytes: int | None = None) -> GpuSpec | None:
    """The spec whose ``match`` fits ``device_name`` (e.g. ``'NVIDIA H200'``), or ``None``.

    Parts that share a name stem have entries of their own (H100 SXM / PCIe / NVL, H200 SXM / NVL,
    A100 40/80 GB SXM / PCIe). Laptop chips, "D", "SUPER" and "S" variants and MIG slices of any GPU are
    not matched: better no "% of peak" than a wrong one. Some cards share one name across memory
    sizes with different chips (an "RTX 3080" has 10 GB and 68 SMs or 12 GB and 70 SMs; an "RTX 3060" 12 or
    8 GB): pass ``total_bytes`` (``torch.cuda.get_device_properties(i).total_memory``) and an entry whose
    memory differs from it by more than ECC and driver reservations explain (under 85 % or over 101 %
    of the datasheet's GiB) is skipped. Used by: notebooks 02, 04, 10, course_utils.gpu_choice.
    """
    if re.search(_NEVER_MATCH, device_name, re.I):
        return None
    for spec in ALL_GPU_SPECS:
        if re.search(spec.match, device_name, re.I) and not (spec.exclude and re.search(spec.exclude, device_name, re.I)):
            if total_bytes is not None and not 0.85 <= total_bytes / (spec.memory_gb * 2**30) <= 1.01:
                continue
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

