"""Lesson 06's one probe of the CPU: can PyTorch's CPU kernels use bf16 hardware here?

Why it matters: on a CPU without native bf16 arithmetic (most laptops: AVX2 only) a bf16 training step
can take several times as long as an fp32 one, so lesson 06 trains bf16 there for a few timed steps
only, and its deeper notebook pretends the hardware away to measure the difference.
"""
from __future__ import annotations

import torch


def cpu_has_native_bf16() -> bool:
    """True when PyTorch's CPU kernels can use bf16 hardware (x86: AVX512-BF16 or AMX tiles).

    The probes are private helpers of torch.cpu (present in 2.4-2.13); where they are missing, on
    non-x86 CPUs, or when PyTorch is limited to AVX2 (ATEN_CPU_CAPABILITY=avx2), we answer False:
    the safe choice, since it only keeps the bf16 runs short."""
    if torch.backends.cpu.get_cpu_capability() != "AVX512":
        return False
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)
