"""Facts behind the review fixes of lessons 06-10 (issue 17), checked against torch itself where code
can check them, and the retired wrong sentences kept out of the lessons."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import nbformat
import pytest
import torch
from torch import nn

from conftest import REPO
from course_utils.memtrack import track_peak

LESSONS = {n: next((REPO / "notebooks").glob(f"{n}_*.ipynb")) for n in ("06", "07", "08", "09", "10")}


def _text(n, kind=None):
    """Lesson n's core and, where it has one, its deeper notebook (issue 33 moved depth there)."""
    cells = nbformat.read(LESSONS[n], as_version=4).cells
    deeper = REPO / "notebooks" / "deeper" / LESSONS[n].name
    if deeper.exists():
        cells = cells + nbformat.read(deeper, as_version=4).cells
    return " ".join(" ".join(c.source for c in cells if kind is None or c.cell_type == kind).split())


RETIRED = {
    "06": [r"only the matmuls get faster", r"Only matmuls get faster", r"course_utils\.memory`",
           r"Autocast halves the activations saved for backward", r"plus a temporary bf16 copy",
           r"simulation mode", r"differ by about that much"],
    "07": [r"restarts its warm-up", r"adds up every tensor created"],
    "08": [r"course_utils\.memory`", r"only two consecutive activations", r"silently behaves like a blocking copy",
           r"typically about twice as fast", r"PYTORCH_CUDA_ALLOC_CONF=expandable_segments",
           r"is what a GPU utilisation meter would show"],
    "09": [r"cannot be started with `mp.spawn` from notebook cells", r"\(it says so\)", r"ten times slower",
           r"a ring: GPU 3 also talks to GPU 0"],
    "10": [r"quiet_native_stderr\(\)", r"get_float32_matmul_precision\(\) != \"highest\"\n", r"exist only on NVIDIA GPUs",
           r"but for any optimizer", r"gains little or nothing on a CPU"],
}


@pytest.mark.parametrize("n", sorted(RETIRED))
def test_retired_sentences_stay_out(n):
    text = _text(n)
    found = [p for p in RETIRED[n] if re.search(p, text)]
    assert not found, f"lesson {n} still says {found}"


@pytest.mark.parametrize("n", sorted(LESSONS))
def test_the_text_is_named_not_just_the_source(n):
    text = _text(n, "markdown")
    assert not re.search(r"\bthe source\b(?! material| code| of)", text, re.I), f"lesson {n} says 'the source' alone"
    if n != "10":  # lesson 10 argues with none of the texts
        assert re.search(r'"(resource planning|tensor operations)" post', text)


def test_cuda_autocast_keeps_norms_in_fp32_and_the_cpu_does_not():
    """Lesson 06: on CUDA layer_norm, group_norm and rms_norm are on the fp32 list (AT_FORALL_FP32 in
    ATen's autocast_mode.h); on the CPU layer_norm stays in bf16 (run here)."""
    header = Path(torch.__file__).parent / "include" / "ATen" / "autocast_mode.h"
    if not header.is_file():
        pytest.skip("this torch install ships no C++ headers")
    src = header.read_text()
    block = src[src.index("#define AT_FORALL_FP32(_)"):src.index("#define AT_FORALL_FP32_SET_OPT_DTYPE")]
    for op in ("layer_norm", "group_norm", "rms_norm"):
        assert f"_({op})" in block
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert nn.functional.layer_norm(torch.randn(4, 8).bfloat16(), (8,)).dtype == torch.bfloat16
    text = _text("06", "markdown")
    assert "`layer_norm`, `group_norm` and `rms_norm` are on the fp32 list" in text


def test_adam_without_its_state_takes_full_size_sign_steps():
    """Lesson 07: a fresh AdamW's first update is lr * sign(g) per parameter (no warm-up)."""
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(1000))
    g = torch.randn(1000)
    w.grad = g.sign() * (g.abs() + 0.1) * 1e-3  # no gradient near eps
    before, lr = w.detach().clone(), 1e-2
    torch.optim.AdamW([w], lr=lr, weight_decay=0.0).step()
    assert torch.allclose(before - w.detach(), lr * w.grad.sign(), rtol=1e-3, atol=1e-6)
    assert "`lr · sign(g)`" in _text("07", "markdown")


def test_lesson_07_saves_the_mps_generator():
    assert 'torch.mps.get_rng_state()' in _text("07", "code") and 'torch.mps.set_rng_state(' in _text("07", "code")


def test_no_grad_peak_holds_three_activations_as_lesson_08_says():
    """Lesson 08's deep MLP at batch 512: each activation 1 MiB; 9 alive with autograd, 3 under no_grad."""
    torch.manual_seed(0)
    deep = nn.Sequential(*[nn.Sequential(nn.Linear(512, 512), nn.ReLU()) for _ in range(8)], nn.Linear(512, 10))
    x = torch.randn(512, 512)
    peaks = {}
    for name, ctx in (("grad", torch.enable_grad), ("no_grad", torch.no_grad)):
        with track_peak("cpu") as t, ctx():
            out = deep(x)
            del out
        peaks[name] = t.peak_bytes / 2**20
    assert round(peaks["no_grad"]) == 3 and round(peaks["grad"]) == 9, peaks
    assert "three are alive at the peak, not two" in _text("08", "markdown")


def test_torchrun_warns_about_node_rank_as_lesson_09_says():
    from torch.distributed import run

    assert "node_rank is only used for static rdzv_backend" in inspect.getsource(run)
    assert '"node_rank is only used for static rdzv_backend"' in _text("09", "markdown")


def test_fsdp2_is_where_lesson_09_says():
    from torch.distributed.fsdp import fully_shard  # noqa: F401

    assert "from torch.distributed.fsdp import fully_shard" in _text("09", "markdown")


def test_recompile_limit_is_what_lesson_10_says():
    import torch._dynamo.config as config

    assert config.recompile_limit == 8
    assert "(8 in torch 2.13)" in _text("10", "markdown")


def test_lesson_10_reads_tf32_through_the_new_api_where_it_exists():
    code = _text("10", "code")
    assert 'hasattr(torch.backends.cuda.matmul, "fp32_precision")' in code
    assert torch.backends.cuda.matmul.fp32_precision in ("none", "ieee", "tf32")
