"""Plumbing for lesson 02's model of an epoch: thread labels, and the memory a size of the
explorer needs before it is run.

The teaching code (timing the parts of a step, the model itself) lives in the notebook; this
module only keeps a distraction out of it (quiet profiling is ``profiling.quiet_kineto``).
Used by: notebook 02.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

FLOAT32 = 4   # bytes per float32 element
INT64 = 8     # bytes per class label (CrossEntropyLoss takes int64 targets)
FIT_FRACTION = 0.7   # a size runs only if its estimate is at most this share of the free memory


def threads_label(n: int) -> str:
    """``'1 CPU thread'`` / ``'16 CPU threads'``: every GPU-vs-CPU verdict names the CPU side it beat."""
    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    return f"{n} CPU thread" + ("" if n == 1 else "s")


def threads_in_note(note: str) -> int | None:
    """The thread count a ledger note such as ``'CPU, 20000 epochs, ..., 1 thread(s)'`` names, or None."""
    m = re.search(r"(\d+) thread", note)
    return int(m.group(1)) if m else None


def mlp_step_bytes(width: int, batch: int, in_features: int = 4, classes: int = 3,
                   optimizer_states: int = 0) -> dict[str, int]:
    """Bytes one float32 training step of a ``in_features -> width -> classes`` MLP needs, by kind.

    - parameters: ``in·w + w + w·c + c`` floats; gradients: as many again; optimizer state:
      ``optimizer_states`` copies (0 for plain SGD, 1 for SGD with momentum, 2 for Adam);
    - inputs: ``batch`` rows of ``in_features`` floats and one int64 label each;
    - activations and backward: at the peak (inside ``backward()``) three ``batch × width``
      float tensors are alive (the ReLU's output, which autograd saves for its backward, the
      gradient flowing into the ReLU and the gradient coming out of it), plus a few
      ``batch × classes`` ones (scores, log-probabilities and their gradients). That "three" is measured, not assumed: ``tests/test_stepmodel.py`` compares
      this estimate with the peak that ``memtrack.track_peak`` sees on a real step.
    Kernel scratch space (BLAS packing buffers, cuBLAS workspaces) is not counted: the margin of
    :func:`fits` is for it, for the allocator's rounding, and for everything else the machine runs.
    """
    params = in_features * width + width + width * classes + classes
    return {"parameters": params * FLOAT32, "gradients": params * FLOAT32,
            "optimizer state": optimizer_states * params * FLOAT32,
            "inputs": batch * (in_features * FLOAT32 + INT64),
            "activations and backward": (3 * batch * width + 4 * batch * classes) * FLOAT32}


def free_bytes(device: torch.device) -> int:
    """Memory a new allocation can get now: on CUDA the driver's free memory
    (``torch.cuda.mem_get_info``) plus what PyTorch's caching allocator holds but does not use;
    elsewhere (CPU, and MPS, whose memory is the machine's) the RAM the OS calls available (psutil)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    import psutil

    return psutil.virtual_memory().available


@dataclass(frozen=True)
class Fit:
    """Whether a size fits: ``needed`` (the estimate), ``free`` and the verdict, with a message."""

    device: str
    needed: int
    free: int
    ok: bool

    def __str__(self) -> str:
        gib = 2**30
        head = f"{self.device}: needs about {self.needed / gib:.2f} GiB, {self.free / gib:.1f} GiB free"
        return head if self.ok else (f"{head}: refused (a size runs only if it needs at most "
                                     f"{FIT_FRACTION:.0%} of the free memory)")


def fits(needed: int, device: torch.device, free: int | None = None) -> Fit:
    """A :class:`Fit` for ``needed`` bytes on ``device`` (``free`` defaults to :func:`free_bytes`)."""
    free = free_bytes(device) if free is None else free
    return Fit(device.type, needed, free, needed <= FIT_FRACTION * free)
