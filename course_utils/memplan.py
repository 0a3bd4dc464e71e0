"""The planner: how much memory one training step needs, measured, estimated without memory, or on paper.

Three answers to one question, compared in lesson 05 (why three: each one's blind spots show up
against the others):

* :func:`measure_training_memory` runs one real step on a copy of the model and reports its peak
  (CUDA: the caching allocator's statistics; elsewhere the dispatch tracker of
  :mod:`course_utils.memtrack`; ``method="profiler"``: the CPU allocator's own reports).
* :func:`estimate_training_memory` runs the *same* step on fake tensors (shapes and dtypes, no data,
  ``FakeTensorMode``) under the same tracker, so a laptop can answer "does a 7B model with AdamW fit
  on an 80 GB card?". Its core is :func:`fake_training_step`; lesson 05 writes the same step out as
  ``fake_step_peak``.
* :func:`formula_training_memory` is the pen-and-paper formula: parameters x
  :func:`bytes_per_parameter` plus an activation term you supply.
"""
from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices
from torch.utils._pytree import tree_flatten, tree_map

from .memtrack import (CUDA_BLOCK, AllocationTracker, PeakTracker, profiler_peak, storage_bytes, track_dispatch,
                       track_peak)

OPTIMIZERS = ("sgd", "sgd-momentum", "adam", "adamw")
PRECISIONS = ("fp32", "bf16-mixed")
LossFn = Callable[[Any], torch.Tensor]

# ------------------------------------------------------------------ one training step, shared by all three


def _check(optimizer: str, precision: str) -> None:
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")


def default_loss(output: Any) -> torch.Tensor:
    """The mean of the squared output, computed in fp32 (sums over every floating tensor the model
    returns when it returns several). Used by the three memory functions when ``loss_fn`` is None."""
    tensors = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not tensors:
        raise TypeError("the model returned no floating-point tensor; pass a loss_fn")
    loss = tensors[0].float().pow(2).mean()
    for t in tensors[1:]:
        loss = loss + t.float().pow(2).mean()
    return loss


def make_optimizer(name: str, params: list[torch.Tensor], foreach: bool | None = None) -> torch.optim.Optimizer:
    """The optimizer called ``name`` (one of :data:`OPTIMIZERS`) with ordinary hyper-parameters."""
    _check(name, "fp32")
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, foreach=foreach)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=foreach)
    cls = torch.optim.Adam if name == "adam" else torch.optim.AdamW
    return cls(params, lr=1e-3, foreach=foreach)


def _call(model: nn.Module, example_input: Any) -> Any:
    if isinstance(example_input, dict):
        return model(**example_input)
    if isinstance(example_input, (tuple, list)):
        return model(*example_input)
    return model(example_input)


def _training_step(model: nn.Module, example_input: Any, optimizer: torch.optim.Optimizer, device_type: str,
                   precision: str, loss_fn: LossFn | None, on_phase: Callable[[str], None] | None = None) -> None:
    """Forward (under autocast for bf16-mixed), loss in fp32, backward, first optimizer step."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    mark = on_phase or (lambda phase: None)
    mark("forward")
    with torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
        output = _call(model, example_input)
    loss = (loss_fn or default_loss)(output)
    del output
    mark("backward")
    loss.backward()
    del loss
    mark("optimizer")
    optimizer.step()
    mark("done")


def _model_tensors(model: nn.Module) -> list[torch.Tensor]:
    return list(itertools.chain(model.parameters(), model.buffers()))


def _input_tensors(example_input: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(example_input)[0] if isinstance(t, torch.Tensor)]


# ------------------------------------------------------------------ measurement


@dataclass
class MemoryMeasurement:
    """One real training step's peak tensor memory (bytes).

    ``peak_bytes`` = ``parameters`` (weights and buffers) + ``inputs`` + ``step_peak_bytes`` (the most the
    step allocated on top of them: activations, gradients, optimizer state, temporaries).
    ``reserved_peak_bytes``/``allocated_peak_bytes``: CUDA only, the allocator's absolute peaks for the
    whole process during the step (reserved = what it holds from the driver, allocated = handed to tensors).
    """

    peak_bytes: int
    parameters: int
    inputs: int
    step_peak_bytes: int
    device: str
    method: str
    optimizer: str
    precision: str
    reserved_peak_bytes: int | None = None
    allocated_peak_bytes: int | None = None


def _warm_up_cuda(device: torch.device) -> None:
    # cuBLAS/cuBLASLt keep a workspace per handle and stream (the autograd engine's device thread has its own
    # handle), allocated on first use through the caching allocator. It is a one-off per process, not part of
    # a training step: allocate it before measuring, with matmuls and biased linears, forward and backward.
    w = torch.randn(64, 64, device=device, requires_grad=True)
    b = torch.randn(64, device=device, requires_grad=True)
    for low_precision in (False, True):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=low_precision):
            x = torch.randn(32, 64, device=device)
            out = torch.nn.functional.linear(x, w, b) + x @ w
        out.float().pow(2).mean().backward()
    del w, b, x, out
    torch.cuda.synchronize(device)


def measure_training_memory(
    model: nn.Module,
    example_input: Any,
    *,
    optimizer: str = "adamw",
    precision: str = "fp32",
    loss_fn: LossFn | None = None,
    device: torch.device | str | None = None,
    method: str = "auto",
) -> MemoryMeasurement:
    """Run one real training step (forward, loss, backward, the optimizer's first step, which creates its
    state) on a copy of ``model`` and return its peak tensor memory. ``model`` itself is not changed.

    ``example_input``: a tensor, a tuple/list of positional arguments, or a dict of keyword arguments.
    ``optimizer``: one of ``"sgd"``, ``"sgd-momentum"``, ``"adam"``, ``"adamw"``. ``precision``: ``"fp32"``
    or ``"bf16-mixed"`` (forward under ``torch.autocast`` with bfloat16). ``loss_fn(output)`` defaults to
    the mean of the squared output in fp32. ``device`` defaults to where the model's parameters are.
    ``method``: ``"auto"`` (CUDA: ``"allocator"``, else ``"tracker"``); ``"allocator"`` (CUDA only:
    ``torch.cuda.max_memory_allocated``, which includes cuBLAS/cuDNN workspaces); ``"tracker"``
    (:func:`track_peak`'s dispatch tracker, any device: operator outputs only); ``"profiler"`` (CPU only:
    ``torch.profiler`` memory events, every allocation the CPU allocator reports, kernel scratch included).

    Used by: notebook 05 and tests/test_memplan.py.
    """
    _check(optimizer, precision)
    if method not in ("auto", "allocator", "tracker", "profiler"):
        raise ValueError(f"method must be 'auto', 'allocator', 'tracker' or 'profiler', got {method!r}")
    first = next(iter(_model_tensors(model)), None)
    dev = torch.device(device) if device is not None else (first.device if first is not None else torch.device("cpu"))
    if dev.type == "meta":
        raise ValueError("a meta model has no memory to measure; use estimate_training_memory")
    method = ("allocator" if dev.type == "cuda" else "tracker") if method == "auto" else method
    if (method == "allocator" and dev.type != "cuda") or (method == "profiler" and dev.type != "cpu"):
        raise ValueError(f"method {method!r} does not measure a {dev.type} step "
                         "('allocator' is CUDA only, 'profiler' CPU only)")
    work = copy.deepcopy(model).to(dev)
    inp = tree_map(lambda t: t.to(dev) if isinstance(t, torch.Tensor) else t, example_input)
    for p in work.parameters():
        p.grad = None
    opt = make_optimizer(optimizer, [p for p in work.parameters() if p.requires_grad])
    if dev.type == "cuda":
        _warm_up_cuda(dev)
    if method == "profiler":
        t = PeakTracker(device=dev, peak_bytes=profiler_peak(lambda: _training_step(work, inp, opt, dev.type, precision,
                                                                                   loss_fn)), method="profiler")
    else:
        with (track_peak(dev) if method == "allocator" else track_dispatch(dev)) as t:
            _training_step(work, inp, opt, dev.type, precision, loss_fn)
    params = storage_bytes(_model_tensors(work), CUDA_BLOCK if dev.type == "cuda" else 1)
    inputs = storage_bytes(_input_tensors(inp), CUDA_BLOCK if dev.type == "cuda" else 1)
    allocated = None if t.start_bytes is None else t.start_bytes + t.peak_bytes
    return MemoryMeasurement(
        peak_bytes=params + inputs + t.peak_bytes,
        parameters=params,
        inputs=inputs,
        step_peak_bytes=t.peak_bytes,
        device=str(dev),
        method=t.method,
        optimizer=optimizer,
        precision=precision,
        reserved_peak_bytes=t.reserved_peak_bytes,
        allocated_peak_bytes=allocated,
    )


# ------------------------------------------------------------------ estimate on fake tensors


@dataclass
class MemoryEstimate:
    """A training step's memory, in bytes, broken down at the moment of its peak.

    ``parameters``: weights and buffers. ``gradients`` and ``optimizer_state``: what of them was live at
    the peak. ``activations``: everything else live at the peak (saved activations, autocast's bf16 weight
    copies, temporaries). ``inputs``: the example batch. ``total_bytes`` is their sum, the step's peak.
    ``peak_phase`` says where the peak happened (forward, backward or optimizer); ``gradients_total`` and
    ``optimizer_state_total`` are their sizes after the step. :func:`formula_training_memory` fills the
    same fields from the pen-and-paper formula (its ``method`` is ``"formula"``).
    """

    parameters: int
    gradients: int
    optimizer_state: int
    activations: int
    inputs: int = 0
    peak_phase: str = ""
    gradients_total: int = 0
    optimizer_state_total: int = 0
    device: str = ""
    method: str = "estimate"
    optimizer: str = "adamw"
    precision: str = "fp32"
    notes: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return self.parameters + self.gradients + self.optimizer_state + self.activations + self.inputs

    def breakdown(self) -> dict[str, int]:
        """The parts as a dict (bytes), in a fixed order, for tables and stacked bar charts."""
        return {
            "parameters": self.parameters,
            "gradients": self.gradients,
            "optimizer_state": self.optimizer_state,
            "activations": self.activations,
            "inputs": self.inputs,
        }


def _fake_like(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    # Called inside FakeTensorMode: a factory call there makes a FakeTensor (metadata only, no memory).
    f = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=device)
    if isinstance(t, nn.Parameter):
        f = nn.Parameter(f, requires_grad=t.requires_grad)
    elif t.requires_grad:
        f.requires_grad_(True)
    return f


def _target_device(model: nn.Module, device: torch.device | str | None) -> torch.device:
    if device is not None:
        return torch.device(device)
    first = next(iter(_model_tensors(model)), None)
    if first is not None and first.device.type != "meta":
        return first.device
    return torch.device("cuda")  # a meta model is usually a question about a GPU


@dataclass
class FakeStep:
    """What :func:`fake_training_step` leaves behind: the tracker (closed by the caller), the fake model,
    input and optimizer after the step, and ``phases``: (phase name, tracker clock when it began)."""

    tracker: AllocationTracker
    model: nn.Module
    example_input: Any
    optimizer: torch.optim.Optimizer
    phases: list[tuple[str, int]]


def fake_training_step(model: nn.Module, example_input: Any, *, optimizer: str, precision: str,
                       device: torch.device, loss_fn: LossFn | None = None,
                       round_to: int = 1, foreach: bool | None = None) -> FakeStep:
    """The estimator's core: one training step on fake tensors, every allocation counted."""
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    with fake_mode:  # 1. a fake twin of every parameter and buffer: shape, dtype, device; no data
        memo = {id(t): _fake_like(t, device) for t in _all_tensors(model)}
        fmodel = copy.deepcopy(model, memo)  # the model's own code, with the fakes in place
        finput = tree_map(lambda t: _fake_like(t, device) if isinstance(t, torch.Tensor) else t, example_input)
        opt = make_optimizer(optimizer, [p for p in fmodel.parameters() if p.requires_grad], foreach=foreach)
    # 2. the very step measure_training_memory runs, under a tracker that adds up each new storage
    tracker = AllocationTracker(round_to=round_to, fake_scalars=True, device_type=device.type)
    phases: list[tuple[str, int]] = []
    try:
        with fake_mode, tracker:
            _training_step(fmodel, finput, opt, device.type, precision, loss_fn,
                           on_phase=lambda phase: phases.append((phase, tracker.clock)))
    except BaseException:
        tracker.close()
        raise
    return FakeStep(tracker, fmodel, finput, opt, phases)


def _all_tensors(model: nn.Module) -> list[torch.Tensor]:
    """Every tensor a module tree holds: parameters, buffers and plain tensor attributes, each once."""
    found: dict[int, torch.Tensor] = {}
    for mod in model.modules():
        for value in itertools.chain(mod._parameters.values(), mod._buffers.values(), vars(mod).values()):
            if isinstance(value, torch.Tensor):
                found.setdefault(id(value), value)
    return list(found.values())


def estimate_training_memory(
    model: nn.Module,
    example_input: Any,
    *,
    optimizer: str = "adamw",
    precision: str = "fp32",
    loss_fn: LossFn | None = None,
    device: torch.device | str | None = None,
) -> MemoryEstimate:
    """The peak tensor memory of one training step, found without allocating it.

    The model (real or built on ``torch.device("meta")``) is copied with fake parameters and the very
    step :func:`measure_training_memory` runs (forward, loss, backward, the optimizer's first step with
    its state creation) is executed under ``FakeTensorMode``, where every tensor has a shape, a dtype and
    a device but no data; :func:`track_peak`'s tracker adds up the storages as they come and go. So it
    works for any ``nn.Module``, including ones that use activation checkpointing inside ``forward``.

    Arguments are those of :func:`measure_training_memory`. ``device`` is the device the step would run
    on (default: the model's; ``"cuda"`` for a meta model). For CUDA it counts the allocator's 512-byte
    rounding and the multi-tensor (``foreach``) optimizer PyTorch picks there. Where CUDA is not
    available it emulates those two, but autocast follows the CPU's rules (which ops run in bf16), so a
    bf16-mixed estimate for CUDA made on a CPU-only machine is an approximation.

    Used by: notebook 05 and tests/test_memplan.py.
    """
    _check(optimizer, precision)
    target = _target_device(model, device)
    fake_dev = target if (target.type != "cuda" or torch.cuda.is_available()) else torch.device("cpu")
    if fake_dev.type == "meta":
        fake_dev = torch.device("cpu")
    round_to = CUDA_BLOCK if target.type == "cuda" else 1
    foreach = target.type in _get_foreach_kernels_supported_devices()  # PyTorch's own default rule

    notes = []
    if fake_dev != target:
        notes.append(f"traced as {fake_dev.type} (no {target.type} here): autocast used the CPU's op rules")
    step = fake_training_step(model, example_input, optimizer=optimizer, precision=precision, loss_fn=loss_fn,
                              device=fake_dev, round_to=round_to, foreach=foreach)
    tracker, fmodel, finput, opt, phases = step.tracker, step.model, step.example_input, step.optimizer, step.phases
    try:
        params = [p for p in fmodel.parameters() if p.requires_grad]
        grad_serials = {s for p in params if p.grad is not None and (s := tracker.serial_of(p.grad)) is not None}
        state_serials = {
            s for st in opt.state.values() for v in st.values()
            if isinstance(v, torch.Tensor) and (s := tracker.serial_of(v)) is not None
        }
        grads_at_peak = tracker.live_at_peak(grad_serials)
        state_at_peak = tracker.live_at_peak(state_serials)
        grads_total = storage_bytes([p.grad for p in params if p.grad is not None], round_to)
        state_total = storage_bytes(
            [v for st in opt.state.values() for v in st.values() if isinstance(v, torch.Tensor)], round_to)
        peak, peak_clock = tracker.peak, tracker.peak_clock
    finally:
        tracker.close()
    phase = next((ph for ph, clock in reversed(phases) if clock < peak_clock), "forward")
    return MemoryEstimate(
        parameters=storage_bytes(_model_tensors(fmodel), round_to),
        gradients=grads_at_peak,
        optimizer_state=state_at_peak,
        activations=peak - grads_at_peak - state_at_peak,
        inputs=storage_bytes(_input_tensors(finput), round_to),
        peak_phase=phase,
        gradients_total=grads_total,
        optimizer_state_total=state_total,
        device=str(target),
        method="estimate",
        optimizer=optimizer,
        precision=precision,
        notes=notes,
    )


# ------------------------------------------------------------------ the formula


def bytes_per_parameter(optimizer: str = "adamw", precision: str = "fp32") -> dict[str, int]:
    """Bytes each parameter costs: weights, gradients, optimizer state (the formula's table).

    fp32: 4 + 4 + optimizer state (SGD 0, SGD with momentum 4, Adam/AdamW 8: two fp32 moments).
    bf16-mixed in the ZeRO paper's accounting (Rajbhandari et al. 2020): bf16 weights 2 + bf16 gradients 2
    + an optimizer state that also holds the fp32 master weights: 4 (+4 momentum) for SGD, 12 for Adam(W).
    (``torch.autocast`` keeps fp32 weights and gradients instead; notebook 05 shows the difference.)
    Used by: notebook 05.
    """
    _check(optimizer, precision)
    moments = {"sgd": 0, "sgd-momentum": 4, "adam": 8, "adamw": 8}[optimizer]
    if precision == "fp32":
        return {"weights": 4, "gradients": 4, "optimizer_state": moments}
    return {"weights": 2, "gradients": 2, "optimizer_state": 4 + moments}


def zero_bytes_per_rank(num_parameters: int, stage: int, world: int, *, optimizer: str = "adamw",
                        precision: str = "fp32") -> dict[str, float]:
    """Model-state bytes on each of ``world`` data-parallel ranks under ZeRO stage 0 (plain data
    parallel), 1 (optimizer state sharded), 2 (+ gradients) or 3 (+ weights): lesson 05's formula
    (section 5, after Rajbhandari et al. 2020, figure 1) with :func:`bytes_per_parameter`'s table.
    Returns the three parts and their ``total``. Used by: notebook 11.
    """
    if stage not in (0, 1, 2, 3) or world < 1:
        raise ValueError(f"stage must be 0-3 and world >= 1, got stage={stage}, world={world}")
    b = bytes_per_parameter(optimizer, precision)
    sharded = {"weights": stage >= 3, "gradients": stage >= 2, "optimizer_state": stage >= 1}
    parts = {k: num_parameters * v / (world if sharded[k] else 1) for k, v in b.items()}
    return {**parts, "total": sum(parts.values())}


def formula_training_memory(
    num_parameters: int | nn.Module,
    *,
    optimizer: str = "adamw",
    precision: str = "fp32",
    activation_bytes: int = 0,
    input_bytes: int = 0,
) -> MemoryEstimate:
    """The pen-and-paper answer: parameters x :func:`bytes_per_parameter` + ``activation_bytes`` (your own
    estimate of what the forward pass keeps for backward) + ``input_bytes``. ``num_parameters`` may be a
    model (its parameters are counted). Same fields as :func:`estimate_training_memory`'s result.

    Used by: tests/test_memplan.py (lesson 05 writes its own formula).
    """
    n = sum(p.numel() for p in num_parameters.parameters()) if isinstance(num_parameters, nn.Module) else num_parameters
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"num_parameters must be a non-negative integer or an nn.Module, got {num_parameters!r}")
    if activation_bytes < 0 or input_bytes < 0:
        raise ValueError("activation_bytes and input_bytes must be >= 0")
    b = bytes_per_parameter(optimizer, precision)
    return MemoryEstimate(
        parameters=n * b["weights"],
        gradients=n * b["gradients"],
        optimizer_state=n * b["optimizer_state"],
        activations=int(activation_bytes),
        inputs=int(input_bytes),
        gradients_total=n * b["gradients"],
        optimizer_state_total=n * b["optimizer_state"],
        method="formula",
        optimizer=optimizer,
        precision=precision,
    )


__all__ = ["OPTIMIZERS", "PRECISIONS", "FakeStep", "MemoryEstimate", "MemoryMeasurement", "bytes_per_parameter",
           "default_loss", "estimate_training_memory", "fake_training_step", "formula_training_memory",
           "make_optimizer", "measure_training_memory", "zero_bytes_per_rank"]
