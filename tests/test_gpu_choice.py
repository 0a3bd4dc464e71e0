"""Every choice of course_utils.gpu_choice for the GPUs students borrow, fed as data: no test needs a GPU."""
from __future__ import annotations

import pytest
import torch

from course_utils.gpu_choice import (DeviceProps, amp_choice, ddp_plan, has_bf16_tensor_cores, kernel_support, peak_for,
                                     pick_size, props_of)
from course_utils.hardware import ALL_GPU_SPECS, BORROWED_SPECS, GPU_SPECS, find_spec

MiB, GiB = 2**20, 2**30
CU130 = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120")  # torch 2.11 CUDA 13.0 wheel
CU126 = ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")

# name as torch.cuda.get_device_name() reports it, capability, total memory as a process sees it, SMs, GPUs,
# the spec-table entry, the AMP mode, the dense 16-bit peak "% of peak" divides by (None: no figure)
CARDS = {
    "T4": ("Tesla T4", (7, 5), 15079 * MiB, 40, 1, "T4", "fp16", 65.0),
    "P100": ("Tesla P100-PCIE-16GB", (6, 0), 16280 * MiB, 56, 1, "P100 PCIe 16GB", "fp16", 18.7),
    "V100": ("Tesla V100-SXM2-16GB", (7, 0), 16160 * MiB, 80, 1, "V100 SXM2 16GB", "fp16", 125.0),
    "L4": ("NVIDIA L4", (8, 9), 22700 * MiB, 58, 1, "L4", "bf16", 121.0),
    "A10G": ("NVIDIA A10G", (8, 6), 22731 * MiB, 80, 1, "A10G", "bf16", None),
    "A100 40GB": ("NVIDIA A100-SXM4-40GB", (8, 0), 40536 * MiB, 108, 1, "A100 40GB SXM", "bf16", 312.0),
    "A100 80GB": ("NVIDIA A100-SXM4-80GB", (8, 0), 81050 * MiB, 108, 1, "A100 80GB SXM", "bf16", 312.0),
    "RTX 3080 Ti": ("NVIDIA GeForce RTX 3080 Ti", (8, 6), 12045 * MiB, 80, 1, "RTX 3080 Ti", "bf16", 68.2),
    "RTX 4090": ("NVIDIA GeForce RTX 4090", (8, 9), 24080 * MiB, 128, 1, "RTX 4090", "bf16", 165.2),
    "RTX 5090": ("NVIDIA GeForce RTX 5090", (12, 0), 32120 * MiB, 170, 1, "RTX 5090", "bf16", 209.5),
    "H100": ("NVIDIA H100 80GB HBM3", (9, 0), 81559 * MiB, 132, 1, "H100 SXM", "bf16", 989.0),
    "H200": ("NVIDIA H200", (9, 0), 143771 * MiB, 132, 1, "H200 SXM", "bf16", 989.0),
    "Kaggle 2xT4": ("Tesla T4", (7, 5), 15079 * MiB, 40, 2, "T4", "fp16", 65.0),
}


def props(card: str, free_fraction: float = 0.95, **changes) -> DeviceProps:
    name, cap, total, sms, count, *_ = CARDS[card]
    fields = dict(kind="cuda", name=name, capability=cap, total_bytes=total, free_bytes=int(total * free_fraction),
                  sm_count=sms, device_count=count, arch_list=CU130)
    fields.update(changes)
    return DeviceProps(**fields)


@pytest.mark.parametrize("card", CARDS)
def test_each_card_finds_its_spec_and_amp_mode(card):
    name, cap, total, sms, count, spec_name, mode, half_peak = CARDS[card]
    p = props(card)
    assert find_spec(p.name, p.total_bytes).name == spec_name
    assert find_spec(p.name, p.total_bytes).capability == cap
    choice = amp_choice(p)
    assert choice.mode == mode
    assert choice.use_scaler == (mode == "fp16")  # fp16 needs loss scaling, bf16 has fp32's exponent range
    assert has_bf16_tensor_cores(p) == (cap >= (8, 0))
    assert f"{cap[0]}.{cap[1]}" in choice.reason and p.name in choice.reason
    assert peak_for(p, "fp16").tflops == half_peak


def test_reasons_say_why_fp16_on_pre_ampere_cards():
    assert "fp16 Tensor Cores and no bf16 ones" in amp_choice(props("T4")).reason
    assert "fp16 Tensor Cores and no bf16 ones" in amp_choice(props("V100")).reason
    assert "no Tensor Cores" in amp_choice(props("P100")).reason
    assert "has bf16 Tensor Cores" in amp_choice(props("H200")).reason


def test_mps_and_cpu_amp():
    mps = amp_choice(DeviceProps("mps", "Apple GPU (MPS)"))
    assert (mps.dtype, mps.use_scaler) == (torch.float16, True)
    cpu = amp_choice(DeviceProps("cpu", "CPU"))
    assert (cpu.dtype, cpu.use_scaler, cpu.mode) == (None, False, "fp32")
    taught = amp_choice(DeviceProps("cpu", "CPU"), cpu_bf16=True)
    assert (taught.dtype, taught.use_scaler) == (torch.bfloat16, False)


def test_amp_choice_is_accepted_by_torch_autocast_on_this_cpu():
    choice = amp_choice(DeviceProps("cpu"), cpu_bf16=True)
    with torch.autocast("cpu", dtype=choice.dtype):
        out = torch.nn.Linear(4, 4)(torch.randn(2, 4))
    assert out.dtype == torch.bfloat16


def test_peaks_for_units_a_card_lacks():
    t4 = props("T4")
    assert peak_for(t4, "bf16").tflops is None and "no bf16 Tensor Cores" in peak_for(t4, "bf16").reason
    tf32 = peak_for(t4, "tf32")  # no TF32 before Ampere: a TF32-allowed matmul runs in fp32
    assert tf32.tflops == 8.1 and "runs in fp32" in tf32.reason
    assert peak_for(t4, "bandwidth").tflops == 0.320
    a10g = peak_for(props("A10G"), "fp32")
    assert a10g.tflops is None and "no datasheet figure for this card" in a10g.reason
    h200 = props("H200")
    assert (peak_for(h200, "fp32").tflops, peak_for(h200, "tf32").tflops, peak_for(h200, "bf16").tflops) == (67.0, 494.5, 989.0)
    assert peak_for(h200, "bandwidth").tflops == 4.8
    assert peak_for(DeviceProps("cpu"), "fp32").tflops is None
    assert "no datasheet figure for this card" in peak_for(DeviceProps("cuda", "NVIDIA B200", (10, 0)), "bf16").reason
    assert peak_for(None, "fp32").tflops is None
    with pytest.raises(ValueError):
        peak_for(h200, "int8")


def test_h200_nvl_has_the_sxm_memory_and_bandwidth_but_its_own_flops():
    sxm, nvl = find_spec("NVIDIA H200"), find_spec("NVIDIA H200 NVL")
    assert (nvl.memory_gb, nvl.bandwidth_tbs) == (sxm.memory_gb, sxm.bandwidth_tbs) == (141, 4.8)
    assert nvl.bf16_tflops < sxm.bf16_tflops and nvl.bf16_sparse_tflops == 1671


def test_memory_disambiguates_cards_that_share_a_name():
    name = "NVIDIA GeForce RTX 3080"
    assert find_spec(name, 10240 * MiB - 200 * MiB).name == "RTX 3080"  # the 10 GB card
    assert find_spec(name, 12288 * MiB - 200 * MiB) is None  # the 12 GB card: another chip (70 SMs)
    assert find_spec(name).name == "RTX 3080"  # without the memory: the name alone decides


def test_every_borrowed_card_in_the_table():
    names = {s.name for s in ALL_GPU_SPECS}
    for required in ("T4", "P100 PCIe 16GB", "V100 SXM2 16GB", "V100 PCIe 32GB", "L4", "A10G", "A100 40GB SXM",
                     "A100 80GB SXM", "H100 SXM", "H100 PCIe", "H200 SXM", "H200 NVL", "RTX 3060", "RTX 3070",
                     "RTX 3080", "RTX 3090", "RTX 4060", "RTX 4070", "RTX 4080", "RTX 4090", "RTX 5070", "RTX 5080",
                     "RTX 5090"):
        assert required in names, required
    assert set(GPU_SPECS) | set(BORROWED_SPECS) == set(ALL_GPU_SPECS)
    for s in ALL_GPU_SPECS:
        assert "https://" in s.source and s.capability is not None and s.memory_gb > 0, s.name
        if s.bf16_tflops is not None:  # Ampere and newer: bf16 Tensor Cores, 2:4 sparsity at twice the dense rate
            assert s.capability >= (8, 0) and s.bf16_sparse_tflops == pytest.approx(2 * s.bf16_tflops, rel=2e-3), s.name
            assert s.fp32_tflops <= s.tf32_tflops <= s.bf16_tflops, s.name
        elif s.half_tflops is not None:  # T4, V100, P100: fp16 only
            assert s.capability < (8, 0) and s.tf32_tflops is None and s.half_tflops > s.fp32_tflops, s.name


def test_t4_figures():
    t4 = find_spec("Tesla T4")
    assert (t4.capability, t4.memory_gb, t4.memory_type, t4.fp16_tflops, t4.bf16_tflops) == ((7, 5), 16, "GDDR6", 65.0, None)


def _gib(n: int) -> int:
    return n * GiB


@pytest.mark.parametrize("card, expected", [("T4", 8), ("A100 80GB", 32), ("H200", 32)])
def test_pick_size_from_free_memory(card, expected):
    p = props(card)
    choice = pick_size([1, 2, 4, 8, 16, 32], lambda s: _gib(s), p.free_bytes, what="GiB buffer")
    assert choice.size == expected
    assert choice.predicted_bytes <= 0.8 * p.free_bytes
    assert "GiB free" in choice.reason


def test_pick_size_refuses_when_nothing_fits():
    with pytest.raises(ValueError, match="not even the smallest"):
        pick_size([4, 8], _gib, free_bytes=_gib(2))
    with pytest.raises(ValueError):
        pick_size([], _gib, free_bytes=_gib(2))


def test_pick_size_uses_the_margin():
    # 10 GiB free: 8 GiB fits at 0.8, not at 0.7
    assert pick_size([4, 8], _gib, _gib(10)).size == 8
    assert pick_size([4, 8], _gib, _gib(10), margin=0.7).size == 4


def test_ddp_plans():
    kaggle = ddp_plan(props("Kaggle 2xT4"))
    assert (kaggle.backend, kaggle.world_size, kaggle.nccl_sizes) == ("nccl", 2, (1, 2))
    assert "one process per GPU" in kaggle.reason
    one = ddp_plan(props("H200"))
    assert (one.backend, one.world_size, one.nccl_sizes) == ("gloo", 2, (1,))
    assert "Duplicate GPU detected" in one.reason
    eight = ddp_plan(props("H100", device_count=8))
    assert eight.nccl_sizes == (1, 2, 4, 8) and eight.world_size == 8
    cpu = ddp_plan(DeviceProps("cpu"))
    assert (cpu.backend, cpu.world_size, cpu.nccl_sizes) == ("gloo", 2, ())
    assert ddp_plan(DeviceProps("mps")).nccl_sizes == ()


def test_kernel_support_of_cuda13_wheels():
    ok, why = kernel_support(props("P100"))
    assert not ok and "cu126" in why and "6.0" in why
    assert not kernel_support(props("V100"))[0]
    assert kernel_support(props("P100", arch_list=CU126))[0]
    assert kernel_support(props("T4"))[0]
    assert kernel_support(props("L4"))[0]  # sm_86 kernels run on 8.9 (same major)
    assert kernel_support(props("RTX 5090"))[0]
    assert kernel_support(props("H200", arch_list=("sm_80", "compute_80")))[0]  # PTX JIT
    assert kernel_support(props("T4", arch_list=()))[0]  # unknown: no claim
    assert kernel_support(DeviceProps("cpu"))[0]


def test_device_props_validation():
    with pytest.raises(ValueError):
        DeviceProps("xpu")
    with pytest.raises(ValueError):
        DeviceProps("cuda", "no capability")
    with pytest.raises(ValueError):
        DeviceProps("cuda", "x", (8, 0), total_bytes=1, free_bytes=2)


def test_props_of_this_machine():
    p = props_of("cpu")
    assert p.kind == "cpu" and amp_choice(p).mode == "fp32"
    if torch.cuda.is_available():  # only on a GPU machine: the real properties
        g = props_of("cuda")
        assert g.capability == torch.cuda.get_device_capability() and 0 < g.free_bytes <= g.total_bytes
