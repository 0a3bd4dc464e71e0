"""course_utils.hardware: the spec table's consistency, name matching (each NVL and PCIe part its own entry, no MIG slice), bandwidth
buffers that fit the device's free memory, and TF32 switches that use the current API and restore state."""
from __future__ import annotations

import math

import pytest
import torch

from course_utils.hardware import (
    GPU_SPECS,
    HAS_FP32_PRECISION_API,
    find_spec,
    float32_matmul_precision,
    stream_buffer_mib,
    tf32_enabled,
)

GiB, MiB = 2**30, 2**20


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
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA H200 MIG 1g.18gb", None),
        ("NVIDIA H200 MIG 7g.141gb", None),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", None),
        ("NVIDIA A100-SXM4-80GB MIG 3g.40gb", None),
        ("NVIDIA GH200 480GB", None),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB SXM"),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA GeForce RTX 4090 D", None),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", None),
        ("NVIDIA GeForce RTX 3080 Ti", "RTX 3080 Ti"),
        ("NVIDIA GeForce RTX 3080", "RTX 3080"),
        ("NVIDIA GeForce RTX 3080 Laptop GPU", None),
        ("NVIDIA GeForce RTX 4070 Ti SUPER", None),
        ("Tesla V100S-PCIE-32GB", None),
        ("NVIDIA T400", None),
        ("cpu", None),
    ],
)
def test_find_spec(name, expected):
    spec = find_spec(name)
    assert (spec.name if spec else None) == expected


def _tf32_state() -> tuple:
    if HAS_FP32_PRECISION_API:
        return torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision
    return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32


def test_tf32_helper_uses_the_new_api_on_this_torch():
    major, minor = (int(v) for v in torch.__version__.split(".")[:2])
    if (major, minor) >= (2, 9):  # the release whose docs made fp32_precision the API to use
        assert HAS_FP32_PRECISION_API
    before = _tf32_state()
    with tf32_enabled(True):
        if HAS_FP32_PRECISION_API:  # the new API, and nothing that would make a legacy read raise
            assert torch.backends.cuda.matmul.fp32_precision == "tf32"
            assert torch.backends.cudnn.conv.fp32_precision == "tf32"
        else:
            assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    with tf32_enabled(False):
        if HAS_FP32_PRECISION_API:
            assert torch.backends.cuda.matmul.fp32_precision == "ieee"
            assert torch.backends.cudnn.conv.fp32_precision == "ieee"
    assert _tf32_state() == before
    with pytest.raises(RuntimeError), tf32_enabled(True):
        raise RuntimeError("boom")
    assert _tf32_state() == before


def test_float32_matmul_precision_is_the_tf32_switch():
    before = _tf32_state()
    with float32_matmul_precision("high"):
        if HAS_FP32_PRECISION_API:
            assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    assert _tf32_state() == before
    with pytest.raises(ValueError):
        with float32_matmul_precision("medium"):  # no CUDA setting for it in the new API
            pass


@pytest.mark.parametrize(
    "requested, free, total, expected",
    [
        (4096, 130 * GiB, 141 * GiB, 4096),  # an idle H200: the full request
        (4096, 11 * GiB, 12 * GiB, 1877),  # a 12 GB card: 3 x 4 GiB would not fit
        (4096, 7 * GiB, 8 * GiB, 1194),
        (64, 2 * GiB, 8 * GiB, 64),  # SMOKE size
    ],
)
def test_stream_buffers_fit_free_memory(requested, free, total, expected):
    mib = stream_buffer_mib(requested, free, total)
    assert mib == expected
    assert 3 * mib * MiB <= 0.5 * free  # all three buffers fit in half the free memory


def test_stream_buffer_rejects_impossible_inputs():
    with pytest.raises(ValueError, match="between 0 and the total"):
        stream_buffer_mib(64, 10 * GiB, 8 * GiB)
    with pytest.raises(ValueError, match="not enough"):
        stream_buffer_mib(64, 2 * MiB, 8 * GiB)
    with pytest.raises(ValueError):
        stream_buffer_mib(0, GiB, GiB)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_stream_buffers_allocate_on_this_gpu():
    free, total = torch.cuda.mem_get_info()
    mib = stream_buffer_mib(4096, free, total)
    buffers = [torch.empty(mib * MiB // 4, device="cuda") for _ in range(3)]
    assert sum(b.numel() * 4 for b in buffers) <= free
