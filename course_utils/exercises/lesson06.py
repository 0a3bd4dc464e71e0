"""Lesson 06's exercises: the smallest loss scale that saves this run's gradients in fp16 (judged
against this run's smallest gradient), which ops CPU autocast keeps in fp32 (judged by running them), and the AMP training step in the right order (judged by running it on a tiny model)."""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..i18n import t
from .core import close, exercise

# --- 06.loss_scale ----------------------------------------------------------------------------

_FP16_SMALLEST = 2.0**-24  # fp16's smallest subnormal: torch.finfo(float16).smallest_normal * eps
_EXAMPLE_G_MIN = 6.4e-15


def smallest_scale(g_min: float) -> float:
    """The smallest power of two S with g_min * S >= 2**-24 (1.0 when g_min already is that large)."""
    return 2.0 ** max(0, math.ceil(math.log2(_FP16_SMALLEST / g_min)))


@exercise("06.loss_scale", right=lambda: smallest_scale(_EXAMPLE_G_MIN), wrong=lambda: 2.0**16,
          example={"g_min": _EXAMPLE_G_MIN})
def _loss_scale(answer: Any, *, g_min: float, **context: Any) -> str | None:
    if torch.is_tensor(answer):
        return t("answer with a Python float, not a tensor: `.item()` turns a one-element tensor into one.")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not math.isfinite(answer) or answer <= 0:
        return t("answer with a positive number, a power of two such as 2.0**10 (got {answer!r})", answer=answer)
    truth = smallest_scale(g_min)
    if close(answer, truth, rel=1e-9):
        return None
    if not close(2.0 ** round(math.log2(answer)), answer, rel=1e-9):
        return t("GradScaler only uses powers of two (multiplying by one changes no mantissa bit): give 2.0**k.")
    if answer * g_min < _FP16_SMALLEST:
        return t("too small: g_min * S = {product:.2e} is still below 2**-24 = {floor:.2e}, so the "
                 "smallest gradient still becomes 0. How many doublings does g_min need to reach 2**-24?",
                 product=answer * g_min, floor=_FP16_SMALLEST)
    return t("big enough, but a smaller power of two also works (and a smaller scale leaves more room before the "
             "largest gradients overflow 65504). Find the smallest k with g_min * 2**k >= 2**-24: math.log2 helps.")


# --- 06.cpu_fp32_ops -------------------------------------------------------------------------

CPU_OPS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "linear": lambda x: F.linear(x, x), "matmul": lambda x: x @ x, "softmax": lambda x: x.softmax(-1),
    "layer_norm": lambda x: F.layer_norm(x, (x.shape[-1],)), "sum": lambda x: x.sum(), "exp": lambda x: x.exp(),
    "prod": lambda x: x.prod(), "mse_loss": lambda x: F.mse_loss(x, x.flip(0)),
    "linalg.inv": lambda x: torch.linalg.inv(x), "fft.rfft": lambda x: torch.fft.rfft(x),
}


def cpu_fp32_ops() -> set[str]:
    """The ops of CPU_OPS that CPU autocast (bf16) computes in fp32 (real or complex64), found by running them."""
    x = (torch.eye(4) + 0.1 * torch.arange(16.0).reshape(4, 4)).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return {name for name, op in CPU_OPS.items() if op(x).dtype in (torch.float32, torch.complex64)}


@exercise("06.cpu_fp32_ops", right=cpu_fp32_ops, wrong=lambda: {"softmax", "layer_norm", "sum"})
def _cpu_fp32_ops(answer: Any, **context: Any) -> str | None:
    if not isinstance(answer, (set, frozenset, list, tuple)) or not all(isinstance(a, str) for a in answer):
        return t("answer with a set of op names taken from {ops}", ops=sorted(CPU_OPS))
    unknown = set(answer) - set(CPU_OPS)
    if unknown:
        return t("{unknown} are not among the ops listed: choose from {ops}", unknown=sorted(unknown), ops=sorted(CPU_OPS))
    truth, got = cpu_fp32_ops(), set(answer)
    if got == truth:
        return None
    if {"softmax", "layer_norm", "sum"} & got:
        return t("softmax, layer_norm and sum are on CUDA's fp32 list. The CPU's list is different, not shorter: "
                 "run them on a bf16 CPU tensor under torch.autocast('cpu') and print the dtypes (section 2).")
    if {"linear", "matmul"} & got:
        return t("linear and matmul are what autocast runs in *low* precision: they are the reason it exists (section 2).")
    return t("some ops are missing: run each one under torch.autocast('cpu', dtype=torch.bfloat16) and look at its dtype.")


# --- 06.amp_step -----------------------------------------------------------------------------

def _amp_step(model, optimizer, scaler, x, y, max_norm, dtype):
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def _clip_before_unscale(model, optimizer, scaler, x, y, max_norm, dtype):
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm)  # clips the *scaled* gradients
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def _run_steps(step: Callable, steps: int = 2) -> tuple[list[torch.Tensor], float, list[torch.dtype]]:
    """Two steps of ``step`` on a hidden tiny model (CPU, bf16 autocast, an enabled GradScaler)."""
    torch.manual_seed(6)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=1)
    seen: list[torch.dtype] = []
    model[0].register_forward_hook(lambda mod, args, out: seen.append(out.dtype))
    gen = torch.Generator().manual_seed(60)
    for _ in range(steps):
        x, y = 3 * torch.randn(32, 8, generator=gen), torch.randint(0, 3, (32,), generator=gen)
        optimizer.zero_grad(set_to_none=True)
        step(model, optimizer, scaler, x, y, 0.05, torch.bfloat16)
    return [p.detach().clone() for p in model.parameters()], scaler.get_scale(), seen


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.allclose(p, q, rtol=1e-4, atol=1e-6) for p, q in zip(a, b))


@exercise("06.amp_step", kind="code", right=lambda: _amp_step, wrong=lambda: _clip_before_unscale)
def _amp_step_judge(answer: Any, **context: Any) -> str | None:
    if not callable(answer):
        return t("pass the function itself, `amp_step` (got {kind}).", kind=type(answer).__name__)
    want, want_scale, _ = _run_steps(_amp_step)
    try:
        got, got_scale, seen = _run_steps(answer)
    except RuntimeError as err:
        if "after step()" not in str(err):
            raise
        return t("PyTorch refused the second step: the scaler was never told a step had ended. "
                 "Which call, after scaler.step(optimizer), adapts the scale and starts a new step (section 5)?")
    if not seen or seen[0] != torch.bfloat16:
        return t("the first Linear layer ran in {ran_in}: run the forward pass and the loss inside "
                 "torch.autocast(device_type=..., dtype=dtype) (section 2).",
                 ran_in=str(seen[0]) if seen else t("no forward pass at all"))
    if got_scale == 2.0**10:
        return t("the scale never changed: after scaler.step(optimizer), scaler.update() adapts it (section 5).")
    if _same(got, want):
        return None if got_scale == want_scale else t("the parameters are right but the scale is not: call update() once per step.")
    if _same(got, _run_steps(_clip_before_unscale)[0]):
        return t("your step clipped the gradients while they were still multiplied by the scale, so the real step "
                 "came out ~1000x too small. What must happen to .grad before a threshold means anything (section 5)?")
    return t("on a hidden tiny model your parameters after two steps differ from the recipe's. Check the order: "
             "autocast forward, scale(loss).backward(), unscale_, clip, scaler.step, scaler.update (section 5).")
