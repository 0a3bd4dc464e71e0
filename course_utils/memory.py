"""How much memory does one training step need? Measure it, estimate it without memory, or work it out
on paper.

Three answers to one question, compared in notebook 05:

* :func:`measure_training_memory` runs one real training step and reports its peak tensor memory:
  on CUDA from the caching allocator's statistics, elsewhere from :func:`track_peak`'s own tracker;
  ``method="profiler"`` instead adds up ``torch.profiler``'s memory events (the CPU allocator's own
  reports), a measurement that shares no code with the tracker.
* :func:`estimate_training_memory` runs the same step on *fake* tensors (shapes and dtypes, no data,
  ``torch._subclasses.FakeTensorMode``) under the same tracker, so it costs no real memory: it answers
  "does a 7B-parameter model with AdamW fit in 80 GB?" on a laptop, for any ``nn.Module``. Its core is
  :func:`fake_training_step`. Where the real step is measured by the same tracker (on a CPU), the two
  agreeing shows that fake and real steps allocate alike, not that the tracker sees everything.
* :func:`formula_training_memory` is the pen-and-paper formula: parameters x bytes per parameter
  plus an activation term you supply.

``track_peak`` is also used on its own (notebooks 05, 06, 07) to measure the peak of any block of code.
"""
from __future__ import annotations

import copy
import itertools
import os
import sys
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

OPTIMIZERS = ("sgd", "sgd-momentum", "adam", "adamw")
PRECISIONS = ("fp32", "bf16-mixed")
CUDA_BLOCK = 512  # the CUDA caching allocator rounds every allocation up to a multiple of 512 bytes
_aten = torch.ops.aten


# --------------------------------------------------------------------------------------------
# track_peak: the peak of live tensor memory in a block of code
# --------------------------------------------------------------------------------------------


@dataclass
class PeakTracker:
    """What :func:`track_peak` found, filled in when the ``with`` block ends.

    ``peak_bytes``: the highest amount of tensor memory allocated *during* the block, above what was
    live when it started. ``end_bytes``: what the block left allocated (e.g. optimizer state created by
    ``opt.step()``). ``start_bytes``: tensor memory live at entry where the device reports it (CUDA),
    else ``None``. ``reserved_peak_bytes``: CUDA only, the caching allocator's peak reservation
    (absolute, whole process) during the block.
    """

    device: torch.device
    peak_bytes: int = 0
    end_bytes: int = 0
    start_bytes: int | None = None
    reserved_peak_bytes: int | None = None
    method: str = ""


class _AllocationTracker(TorchDispatchMode):
    """Counts the bytes of every new tensor storage that an operator creates, and subtracts them when
    the storage is freed (a ``weakref.finalize`` on the storage object, which PyTorch keeps alive exactly
    as long as the memory since 2.1). Views share their base's storage and are counted once; storages
    that existed before the tracker started (parameters, inputs) are never counted.

    Works for forward, autograd's backward (which runs on the calling thread for CPU tensors and carries
    the mode stack into its worker threads) and optimizer steps, on real, meta and fake tensors.
    Kernel-internal scratch buffers (never seen as an operator's output) are invisible to it.
    """

    def __init__(self, round_to: int = 1, fake_scalars: bool = False, device_type: str | None = None) -> None:
        super().__init__()
        self.round_to = round_to
        self.device_type = device_type  # count only storages on this kind of device (None: all)
        self.fake_scalars = fake_scalars  # answer .item() with 1 (fake tensors hold no values)
        # A tracker of real memory skips fake tensors (an estimate running inside a measured block).
        self._skip: tuple[type, ...] = () if fake_scalars else _fake_tensor_types()
        self.live = 0
        self.peak = 0
        self.clock = 0  # one tick per new storage
        self.peak_clock = 0
        self._ids = itertools.count()
        self._sizes: dict[int, tuple[int, int]] = {}  # id(storage) -> (serial, bytes)
        self._born: dict[int, int] = {}  # serial -> clock at allocation
        self._died: dict[int, int] = {}  # serial -> clock at free
        self._bytes: dict[int, int] = {}  # serial -> bytes
        self._finalizers: list[weakref.finalize] = []
        self.open = True

    def _round(self, n: int) -> int:
        r = self.round_to
        return n if r <= 1 or n == 0 else -(-n // r) * r

    def _freed(self, key: int) -> None:
        entry = self._sizes.pop(key, None)
        if entry is not None and self.open:
            serial, nbytes = entry
            self.live -= nbytes
            self._died[serial] = self.clock

    def serial_of(self, t: torch.Tensor) -> int | None:
        """The tracker's serial number of ``t``'s storage, if the tracker saw it allocated."""
        entry = self._sizes.get(id(t.untyped_storage()))
        return entry[0] if entry else None

    def live_at_peak(self, serials: set[int]) -> int:
        """Bytes of the storages in ``serials`` that were live at the moment of the peak."""
        return sum(
            self._bytes[s]
            for s in serials
            if self._born[s] <= self.peak_clock and self._died.get(s, 1 << 62) > self.peak_clock
        )

    def _note(self, t: torch.Tensor, inputs: set[int]) -> None:
        if (self.device_type is not None and t.device.type != self.device_type) or isinstance(t, self._skip):
            return
        st = t.untyped_storage()
        key = id(st)
        if key in inputs:
            return
        nbytes = self._round(st.nbytes())
        if key in self._sizes:  # a storage we track was resized in place
            serial, old = self._sizes[key]
            if old != nbytes:
                self._sizes[key] = (serial, nbytes)
                self._bytes[serial] = max(self._bytes[serial], nbytes)
                self.live += nbytes - old
        else:
            serial = next(self._ids)
            self.clock += 1
            self._sizes[key] = (serial, nbytes)
            self._born[serial], self._bytes[serial] = self.clock, nbytes
            self.live += nbytes
            self._finalizers.append(weakref.finalize(st, self._freed, key))
        if self.live > self.peak:
            self.peak, self.peak_clock = self.live, self.clock

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        if self.fake_scalars and func is _aten._local_scalar_dense.default:
            dtype = args[0].dtype
            return True if dtype == torch.bool else (1.0 if dtype.is_floating_point or dtype.is_complex else 1)
        out = func(*args, **kwargs)
        if func is _aten.lift_fresh.default:  # torch.tensor(data): its storage was just created, outside any op
            inputs: set[int] = set()
        else:
            flat_in, _ = tree_flatten((args, kwargs))
            inputs = {id(a.untyped_storage()) for a in flat_in if isinstance(a, torch.Tensor) and _has_storage(a)}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and _has_storage(t):
                self._note(t, inputs)
        return out

    def close(self) -> None:
        self.open = False
        for f in self._finalizers:
            f.detach()
        self._finalizers.clear()


def _fake_tensor_types() -> tuple[type, ...]:
    try:
        from torch._subclasses.fake_tensor import FakeTensor

        return (FakeTensor,)
    except ImportError:  # pragma: no cover
        return ()


def _has_storage(t: torch.Tensor) -> bool:
    try:
        t.untyped_storage()
        return True
    except (RuntimeError, NotImplementedError):  # sparse, nested, some wrapper subclasses
        return False


@contextmanager
def track_peak(device: torch.device | str | None = None) -> Iterator[PeakTracker]:
    """Measure the peak tensor memory of a block: ``with track_peak(device) as t: ...; t.peak_bytes``.

    On CUDA: ``torch.cuda.reset_peak_memory_stats`` then ``max_memory_allocated`` (what the caching
    allocator handed out, rounded to 512-byte blocks, including scratch space such as cuDNN workspaces),
    relative to ``memory_allocated`` at entry. This resets the process-wide peak statistics, so do not
    nest two CUDA trackers. Elsewhere (CPU, MPS, meta): a ``TorchDispatchMode`` that adds up every new
    tensor storage created inside the block and subtracts it when freed (kernel-internal scratch memory
    is not seen; frees of tensors created before the block are not subtracted).

    Used by: notebooks 05, 06, 07 and :func:`measure_training_memory`.
    """
    dev = torch.device(device) if device is not None else torch.device("cpu")
    result = PeakTracker(device=dev)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        start = torch.cuda.memory_allocated(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        result.start_bytes, result.method = start, "cuda-allocator"
        try:
            yield result
        finally:
            torch.cuda.synchronize(dev)
            result.peak_bytes = max(0, torch.cuda.max_memory_allocated(dev) - start)
            result.end_bytes = torch.cuda.memory_allocated(dev) - start
            result.reserved_peak_bytes = torch.cuda.max_memory_reserved(dev)
        return
    tracker = _AllocationTracker(device_type=dev.type)
    result.method = "dispatch-tracker"
    try:
        with tracker:
            yield result
    finally:
        result.peak_bytes, result.end_bytes = tracker.peak, tracker.live
        tracker.close()


# --------------------------------------------------------------------------------------------
# One training step, shared by the measurement and the estimate
# --------------------------------------------------------------------------------------------


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


def _training_step(model, example_input, optimizer, device_type, precision, loss_fn, on_phase=None):  # noqa: ANN001
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


def _unique_storage_bytes(tensors: list[torch.Tensor], round_to: int = 1) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        if isinstance(t, torch.Tensor) and _has_storage(t):
            st = t.untyped_storage()
            n = st.nbytes()
            seen[id(st)] = n if round_to <= 1 or n == 0 else -(-n // round_to) * round_to
    return sum(seen.values())


def _model_tensors(model: nn.Module) -> list[torch.Tensor]:
    return list(itertools.chain(model.parameters(), model.buffers()))


def _input_tensors(example_input: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(example_input)[0] if isinstance(t, torch.Tensor)]


# --------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------


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


def _profiler_peak(fn: Callable[[], None]) -> int:
    """Peak bytes above the start that the CPU allocator reported while ``fn`` ran, from
    ``torch.profiler`` with ``profile_memory=True``: every allocation and free (sizes signed) in time order."""
    from torch.profiler import ProfilerActivity, profile

    with _stderr_silenced(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        live += e.nbytes()
        peak = max(peak, live)
    return peak


@contextmanager
def _stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null for a block. Recent torch.profiler back ends (Kineto) write
    "USDT: profiler_start/stop" lines with a timestamp there on every start and stop, which would land in
    a notebook's stored outputs. Python exceptions still propagate; only C++ log lines are lost."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextmanager
def _tracked(device: torch.device) -> Iterator[PeakTracker]:
    """:func:`track_peak`'s dispatch tracker on any device, CUDA included (for fake-vs-real comparisons)."""
    result = PeakTracker(device=device, method="dispatch-tracker")
    tracker = _AllocationTracker(round_to=CUDA_BLOCK if device.type == "cuda" else 1, device_type=device.type)
    try:
        with tracker:
            yield result
    finally:
        result.peak_bytes, result.end_bytes = tracker.peak, tracker.live
        tracker.close()


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
    loss_fn: Callable[[Any], torch.Tensor] | None = None,
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

    Used by: notebook 05 and tests/test_memory.py.
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
        t = PeakTracker(device=dev, peak_bytes=_profiler_peak(lambda: _training_step(work, inp, opt, dev.type, precision,
                                                                                   loss_fn)), method="profiler")
    else:
        with (track_peak(dev) if method == "allocator" else _tracked(dev)) as t:
            _training_step(work, inp, opt, dev.type, precision, loss_fn)
    params = _unique_storage_bytes(_model_tensors(work), CUDA_BLOCK if dev.type == "cuda" else 1)
    inputs = _unique_storage_bytes(_input_tensors(inp), CUDA_BLOCK if dev.type == "cuda" else 1)
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


# --------------------------------------------------------------------------------------------
# Estimate on fake tensors
# --------------------------------------------------------------------------------------------


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

    tracker: _AllocationTracker
    model: nn.Module
    example_input: Any
    optimizer: torch.optim.Optimizer
    phases: list[tuple[str, int]]


def fake_training_step(model: nn.Module, example_input: Any, *, optimizer: str, precision: str,
                       device: torch.device, loss_fn: Callable[[Any], torch.Tensor] | None = None,
                       round_to: int = 1, foreach: bool | None = None) -> FakeStep:
    """The estimator's core: one training step on fake tensors, every allocation counted."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    with fake_mode:  # 1. a fake twin of every parameter and buffer: shape, dtype, device; no data
        memo = {id(t): _fake_like(t, device) for t in _all_tensors(model)}
        fmodel = copy.deepcopy(model, memo)  # the model's own code, with the fakes in place
        finput = tree_map(lambda t: _fake_like(t, device) if isinstance(t, torch.Tensor) else t, example_input)
        opt = make_optimizer(optimizer, [p for p in fmodel.parameters() if p.requires_grad], foreach=foreach)
    # 2. the very step measure_training_memory runs, under a tracker that adds up each new storage
    tracker = _AllocationTracker(round_to=round_to, fake_scalars=True, device_type=device.type)
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
    loss_fn: Callable[[Any], torch.Tensor] | None = None,
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

    Used by: notebook 05 and tests/test_memory.py.
    """
    _check(optimizer, precision)
    target = _target_device(model, device)
    fake_dev = target if (target.type != "cuda" or torch.cuda.is_available()) else torch.device("cpu")
    if fake_dev.type == "meta":
        fake_dev = torch.device("cpu")
    round_to = CUDA_BLOCK if target.type == "cuda" else 1
    try:
        from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices

        foreach_devices = _get_foreach_kernels_supported_devices()
    except ImportError:  # pragma: no cover - private helper; this is its list in torch 2.4-2.13
        foreach_devices = ["cuda", "xpu"]
    foreach = target.type in foreach_devices

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
        grads_total = _unique_storage_bytes([p.grad for p in params if p.grad is not None], round_to)
        state_total = _unique_storage_bytes(
            [v for st in opt.state.values() for v in st.values() if isinstance(v, torch.Tensor)], round_to)
        peak, peak_clock = tracker.peak, tracker.peak_clock
    finally:
        tracker.close()
    phase = next((ph for ph, clock in reversed(phases) if clock < peak_clock), "forward")
    return MemoryEstimate(
        parameters=_unique_storage_bytes(_model_tensors(fmodel), round_to),
        gradients=grads_at_peak,
        optimizer_state=state_at_peak,
        activations=peak - grads_at_peak - state_at_peak,
        inputs=_unique_storage_bytes(_input_tensors(finput), round_to),
        peak_phase=phase,
        gradients_total=grads_total,
        optimizer_state_total=state_total,
        device=str(target),
        method="estimate",
        optimizer=optimizer,
        precision=precision,
        notes=notes,
    )


# --------------------------------------------------------------------------------------------
# The formula
# --------------------------------------------------------------------------------------------


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

    Used by: notebook 05.
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


__all__ = [
    "OPTIMIZERS",
    "PRECISIONS",
    "MemoryEstimate",
    "MemoryMeasurement",
    "PeakTracker",
    "bytes_per_parameter",
    "default_loss",
    "FakeStep",
    "estimate_training_memory",
    "fake_training_step",
    "formula_training_memory",
    "make_optimizer",
    "measure_training_memory",
    "track_peak",
]
