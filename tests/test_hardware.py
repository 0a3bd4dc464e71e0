"""course_utils.hardware: the spec table's consistency, name matching, and state restoring."""
from __future__ import annotations

import math

import pytest
import torch

from course_utils.hardware import GPU_SPECS, find_spec, float32_matmul_precision, torch_threads


def test_spec_table_is_consistent():
    assert [s.name for s in GPU_SPECS] == ["RTX 3080 Ti", "RTX 4090", "A100 80GB SXM", "H100 SXM", "H200 SXM"]
    for s in GPU_SPECS:
        assert s.bf16_sparse_tflops == pytest.approx(2 * s.bf16_tflops, rel=1e-3), s.name
        assert s.fp32_tflops <= s.tf32_tflops <= s.bf16_tflops, s.name
        assert s.fp16_acc16_tflops is None or s.fp16_acc16_tflops >= s.bf16_tflops
        assert s.memory_gb > 0 and s.bandwidth_tbs > 0 and "https://" in s.source


def test_headline_figures():
    h100, h200 = find_spec("NVIDIA H100 80GB HBM3"), find_spec("NVIDIA H200")
    assert h100.name == "H100 SXM" and h200.name == "H200 SXM"
    assert h200.bf16_sparse_tflops == 1979 and h200.bf16_tflops == 989
    assert (h200.fp32_tflops, h200.bf16_tflops) == (h100.fp32_tflops, h100.bf16_tflops)  # same chip
    assert (h200.memory_gb, h200.bandwidth_tbs) == (141, 4.8)
    assert math.isclose(h200.ridge_flop_per_byte, 206.04, rel_tol=1e-3)
    assert math.isclose(h100.ridge_flop_per_byte, 295.2, rel_tol=1e-3)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA GH200 480GB", None),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", None),
        ("NVIDIA H100 NVL", None),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("NVIDIA A100-SXM4-40GB", None),
        ("NVIDIA A100 80GB PCIe", None),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA GeForce RTX 4090 D", None),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", None),
        ("NVIDIA GeForce RTX 3080 Ti", "RTX 3080 Ti"),
        ("NVIDIA GeForce RTX 3080", None),
        ("cpu", None),
    ],
)
def test_find_spec(name, expected):
    spec = find_spec(name)
    assert (spec.name if spec else None) == expected


def test_float32_matmul_precision_restores():
    before = torch.get_float32_matmul_precision()
    with float32_matmul_precision("high"):
        assert torch.get_float32_matmul_precision() == "high"
    assert torch.get_float32_matmul_precision() == before
    with pytest.raises(RuntimeError), float32_matmul_precision("high"):
        raise RuntimeError("boom")
    assert torch.get_float32_matmul_precision() == before
    with pytest.raises(ValueError):
        with float32_matmul_precision("tf32"):
            pass


def test_torch_threads_restores():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError):
        with torch_threads(0):
            pass
