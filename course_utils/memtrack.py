"""The allocation tracker: the peak tensor memory of a block of code, on any device.

Why our own tracker: a CUDA device keeps peak statistics (``torch.cuda.max_memory_allocated``), a CPU
and fake tensors have none, and lesson 05 needs the same counter on a real step and on a fake one, so
that the two can be compared. :class:`AllocationTracker` is a ``TorchDispatchMode`` that sees every
operator's outputs; :func:`track_peak` picks the allocator's statistics on CUDA and the tracker
elsewhere. :func:`profiler_peak` is a measurement that shares no code with the tracker (the CPU
allocator's own reports via ``torch.profiler``), to check the tracker's blind spots.

The planner that uses all this to estimate a training step is :mod:`course_utils.memplan`.
"""
from __future__ import annotations

import itertools
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

CUDA_BLOCK = 512  # the CUDA caching allocator rounds every allocation up to a multiple of 512 bytes
_aten = torch.ops.aten


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


class AllocationTracker(TorchDispatchMode):
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
        self._skip: tuple[type, ...] = () if fake_scalars else (FakeTensor,)
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

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if self.fake_scalars and func is _aten._local_scalar_dense.default:
            dtype = args[0].dtype
            return True if dtype == torch.bool else (1.0 if dtype.is_floating_point or dtype.is_complex else 1)
        out = func(*args, **kwargs)
        if func is _aten.lift_fresh.default:  # torch.tensor(data): its storage was just created, outside any op
            inputs: set[int] = set()
        else:
            flat_in, _ = tree_flatten((args, kwargs))
            inputs = {id(a.untyped_storage()) for a in flat_in if isinstance(a, torch.Tensor) and has_storage(a)}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and has_storage(t):
                self._note(t, inputs)
        return out

    def close(self) -> None:
        self.open = False
        for f in self._finalizers:
            f.detach()
        self._finalizers.clear()


def has_storage(t: torch.Tensor) -> bool:
    """Whether ``t`` has a storage to count (sparse, nested and some wrapper tensors do not)."""
    try:
        t.untyped_storage()
        return True
    except (RuntimeError, NotImplementedError):
        return False


def storage_bytes(tensors: list[torch.Tensor], round_to: int = 1) -> int:
    """Bytes of the distinct storages behind ``tensors`` (tied weights and views counted once), each
    rounded up to ``round_to`` (512 on CUDA, like the caching allocator)."""
    seen: dict[int, int] = {}
    for t in tensors:
        if isinstance(t, torch.Tensor) and has_storage(t):
            st = t.untyped_storage()
            n = st.nbytes()
            seen[id(st)] = n if round_to <= 1 or n == 0 else -(-n // round_to) * round_to
    return sum(seen.values())


@contextmanager
def track_peak(device: torch.device | str | None = None) -> Iterator[PeakTracker]:
    """Measure the peak tensor memory of a block: ``with track_peak(device) as t: ...; t.peak_bytes``.

    On CUDA: ``torch.cuda.reset_peak_memory_stats`` then ``max_memory_allocated`` (what the caching
    allocator handed out, rounded to 512-byte blocks, including scratch space such as cuDNN workspaces),
    relative to ``memory_allocated`` at entry. This resets the process-wide peak statistics, so do not
    nest two CUDA trackers. Elsewhere (CPU, MPS, meta): a ``TorchDispatchMode`` that adds up every new
    tensor storage created inside the block and subtracts it when freed (kernel-internal scratch memory
    is not seen; frees of tensors created before the block are not subtracted).

    Used by: notebooks 05, 06, 07, 08 and :func:`course_utils.memplan.measure_training_memory`.
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
    with track_dispatch(dev) as result:
        yield result


@contextmanager
def track_dispatch(device: torch.device) -> Iterator[PeakTracker]:
    """:func:`track_peak`'s dispatch tracker on any device, CUDA included: on CUDA it is the measurement that
    counts exactly what an estimate on fake tensors counts (operator outputs, 512-byte blocks), so the
    two can be compared without the workspaces only the allocator sees."""
    result = PeakTracker(device=device, method="dispatch-tracker")
    tracker = AllocationTracker(round_to=CUDA_BLOCK if device.type == "cuda" else 1, device_type=device.type)
    try:
        with tracker:
            yield result
    finally:
        result.peak_bytes, result.end_bytes = tracker.peak, tracker.live
        tracker.close()


def profiler_peak(fn: Callable[[], None]) -> int:
    """Peak bytes above the start that the CPU allocator reported while ``fn`` ran, from
    ``torch.profiler`` with ``profile_memory=True``: every allocation and free (sizes signed) in time order."""
    from torch.profiler import ProfilerActivity, profile

    from .profiling import quiet_kineto

    with quiet_kineto(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        live += e.nbytes()
        peak = max(peak, live)
    return peak


__all__ = ["CUDA_BLOCK", "AllocationTracker", "PeakTracker", "has_storage", "profiler_peak", "storage_bytes",
           "track_dispatch", "track_peak"]
