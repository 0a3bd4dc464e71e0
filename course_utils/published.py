"""Published measurements that stand in where the course has no measured reference card.

A CPU-only student has no GPU card to compare with until someone contributes one; these figures
show what real GPUs reach, each with its source, and ``compare`` labels them "published" so they
are never read as measured by the course. Only figures measured the way the course's key is
measured belong here (not datasheet peaks: those are in ``course_utils.hardware``).

``hw.matmul_bf16_tflops`` (lesson 04: the best bf16 matmul TFLOP/s over the sizes it tries) beside
Stas Bekman's "Maximum Achievable Matmul FLOPS" (MAMF): the best BF16 ``torch.matmul`` throughput
found by a search over shapes (mean of 100 iterations after 50 warm-up), no sparsity. A search over
shapes can only find more than the lesson's few square sizes, so read it as the ceiling.
"""
from __future__ import annotations

from dataclasses import dataclass

MAMF_SOURCE = ("Stas Bekman, Machine Learning Engineering, 'Maximum Achievable Matmul FLOPS comparison table' (BF16), "
               "https://github.com/stas00/ml-engineering/blob/b9e29720eebd4aa946fa9678975385efbc90a777/"
               "compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table")


@dataclass(frozen=True)
class Published:
    device: str
    value: float
    unit: str
    torch: str
    source: str


PUBLISHED: dict[str, tuple[Published, ...]] = {
    "hw.matmul_bf16_tflops": (
        Published("A100 SXM", 271.2, "TFLOP/s", "2.6.0+cu126", MAMF_SOURCE),
        Published("A100 PCIe", 252.9, "TFLOP/s", "2.5.1+cu124", MAMF_SOURCE),
        Published("H100 SXM", 794.5, "TFLOP/s", "2.7.0+cu126", MAMF_SOURCE),
        Published("GH200 SXM", 828.6, "TFLOP/s", "2.6.0+cu126", MAMF_SOURCE),
    ),
}


def figures(key: str) -> tuple[Published, ...]:
    """The published stand-ins for one ledger key (none for most keys)."""
    return PUBLISHED.get(key, ())
