"""What lesson 11's sharded-training script (``course_utils/fsdp_train.py``) imports so that the
script itself stays about FSDP2: the lesson's torch floor, the FSDP2 imports, a toy model with an
initialisation that gives the same weights whether a parameter is whole or a shard, the per-step
batch, two measurements (bytes held per rank, and the peak plus the collectives of one step, from
``torch.profiler``), and checkpoint folders that are committed atomically.

The script is launched with torchrun (``-m course_utils.fsdp_train``); ``child_environment`` puts the
repository on the workers' ``PYTHONPATH``, so ``from course_utils.sharding import ...`` works there.
"""
from __future__ import annotations

import math
import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import torch
from torch import nn

from .atomic import fsync_dir
from .memtrack import storage_bytes


#: The first torch whose FSDP2 trains correctly on CPU processes (gloo). Evidence, from each release's
#: source and from runs of both lesson-11 notebooks (tools/compat.sh, Python 3.12, 2026-12-04):
#: 2.4's ``FSDPCommContext.init`` (``_composable/fsdp/_fsdp_param_group.py``) creates four
#: ``torch.cuda.Stream``s; 2.5's ``lazy_init`` raises "FSDP requires CUDA for streams" without CUDA;
#: 2.6 asks ``_get_device_handle(device.type)`` for its streams, but ``torch.cpu.Stream`` has no
#: ``record_event``, which ``foreach_all_gather`` calls (2.6.0: every rank stops with "'Stream' object
#: has no attribute 'record_event'"); 2.7.1 and 2.8.0 run, but ZeRO-2/ZeRO-3 on 2 gloo ranks end
#: 3.7e-5 (mean) from one process's weights instead of 5e-9, as if gradients were summed, not
#: averaged (probably: gloo's reduce-scatter then ran its all-reduces without the reduce op, as the
#: diff of pytorch PR 149869 shows);
#: 2.9.1, 2.10.0, 2.11.0 and 2.13.0 pass every check.
FSDP2_CPU_FLOOR = (2, 9)


class TorchTooOld(RuntimeError):
    """Raised at a lesson's setup when its torch is below the lesson's own floor. Jupyter shows it as
    its one-line message, without a traceback (``_render_traceback_``)."""

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


def fsdp2_floor_problem(version: str | None = None) -> str | None:
    """``None`` when ``version`` (default: this torch) runs lesson 11, else the one line that says why
    not and what to do, for :func:`require_fsdp2` (lesson 11's setup) and its tests."""
    version = version or torch.__version__
    m = re.match(r"(\d+)\.(\d+)", version)
    if m is None or (int(m.group(1)), int(m.group(2))) >= FSDP2_CPU_FLOOR:
        return None
    floor = ".".join(map(str, FSDP2_CPU_FLOOR))
    return (f"Lesson 11 needs torch >= {floor} for FSDP2 on a CPU; this is {version}: before {floor}, FSDP2 "
            f"on the CPU stops (before 2.7) or ends far from one process's weights (2.7, 2.8). Install "
            f"torch >= {floor} (pip install -U torch), restart the kernel and run the lesson again.")


def require_fsdp2(version: str | None = None) -> None:
    """Stop the lesson at its setup, with one line, below its floor (:func:`fsdp2_floor_problem`).
    Used by: notebook 11."""
    problem = fsdp2_floor_problem(version)
    if problem:
        raise TorchTooOld(problem)


def fsdp_api() -> tuple[Any, Any, Any]:
    """``(fully_shard, MixedPrecisionPolicy, CPUOffloadPolicy)``, public in ``torch.distributed.fsdp``
    since torch 2.6 (the lesson's floor is 2.9). Used by: lesson 11's script, course_utils/fsdp_train.py."""
    require_fsdp2()
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    return fully_shard, MixedPrecisionPolicy, CPUOffloadPolicy


# ----------------------------------------------------------------------------- the toy task


def make_model(width: int, layers: int) -> nn.Sequential:
    """``layers`` blocks of Linear(width, width) + ReLU, then Linear(width, width): every Linear is one
    FSDP2 unit of the same size. Build it on ``torch.device("meta")`` and fill it with :func:`init_weights_`."""
    blocks: list[nn.Module] = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*blocks, nn.Linear(width, width))


def full_value(index: int, shape: torch.Size | tuple[int, ...]) -> torch.Tensor:
    """Parameter number ``index``'s initial value: seeded by its index only, so every rank and every
    world size computes the same numbers (scaled like PyTorch's Linear init, ~1/sqrt(fan_in))."""
    g = torch.Generator().manual_seed(1000 + index)
    fan_in = shape[-1] if len(shape) > 1 else shape[0]
    return torch.randn(tuple(shape), generator=g) / math.sqrt(fan_in)


@torch.no_grad()
def init_weights_(model: nn.Module) -> None:
    """Give every parameter its :func:`full_value`. A DTensor shard (FSDP2) gets its own rows only:
    FSDP2 shards dim 0 like ``torch.chunk``, so rank r holds ``full.chunk(world)[r]`` (maybe empty).
    The full value of one parameter exists for a moment; the whole model never does."""
    for i, p in enumerate(model.parameters()):
        full = full_value(i, p.shape)
        local = p.to_local() if hasattr(p, "to_local") else p
        if local is not p:
            mesh = p.device_mesh
            rows = full.chunk(mesh.size(), dim=0)
            mine = rows[mesh.get_local_rank()] if mesh.get_local_rank() < len(rows) else full[:0]
            local.copy_(mine.to(local.dtype))
        else:
            p.copy_(full)


def global_batch(step: int, size: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Step ``step``'s whole batch (the same on every rank): inputs and a regression target."""
    g = torch.Generator().manual_seed(step)
    x = torch.randn(size, width, generator=g)
    return x, torch.tanh(x.roll(1, dims=1))


def my_rows(x: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    """This rank's equal share of a global batch; refuses a batch the world size does not divide
    (the ranks would average unequal means, and the comparison with one process would fail)."""
    if x.shape[0] % world:
        raise ValueError(f"the global batch ({x.shape[0]}) must be a multiple of the world size ({world})")
    return x.chunk(world)[rank]


# ----------------------------------------------------------------------------- measurements


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if hasattr(t, "to_local") else t


def _optimizer_state_tensors(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    inner = getattr(optimizer, "optim", optimizer)  # ZeroRedundancyOptimizer keeps its shard's optimizer in .optim
    return [_local(v) for state in inner.state.values() for v in state.values() if isinstance(v, torch.Tensor)]


def held_bytes(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes this rank holds right now for parameters, gradients and optimizer state: the storages
    behind the local tensors (a DTensor counts its shard; views into one buffer count once)."""
    params = [_local(p) for p in model.parameters()]
    grads = [_local(p.grad) for p in model.parameters() if p.grad is not None]
    return {"params": storage_bytes(params), "grads": storage_bytes(grads),
            "optimizer": storage_bytes(_optimizer_state_tensors(optimizer))}


#: The c10d operators a step calls (what the Python side asked for), by the name the lesson uses.
C10D_OPS = {"c10d::allreduce_": "all-reduce", "c10d::_allgather_base_": "all-gather", "c10d::allgather_": "all-gather",
            "c10d::allgather_into_tensor_coalesced_": "all-gather", "c10d::_reduce_scatter_base_": "reduce-scatter",
            "c10d::reduce_scatter_": "reduce-scatter", "c10d::reduce_scatter_tensor_coalesced_": "reduce-scatter",
            "c10d::broadcast_": "broadcast"}
#: What the backend then ran, from its own profiler events (``gloo:all_reduce``, ...): the event's
#: tensor (an all-gather's is the input shard, so it is scaled by N to the gathered size) and the
#: ring algorithm's bytes on the wire per rank, as a multiple of the whole tensor, for N ranks.
WIRE = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
        "reduce_scatter": lambda n: (n - 1) / n, "broadcast": lambda n: (n - 1) / n}


def _numel(shape: Any) -> int:
    """Elements of a profiler input shape: a list of ints, or a list of such lists (tensor lists)."""
    if not shape:
        return 0
    if isinstance(shape[0], (list, tuple)):
        return sum(_numel(s) for s in shape)
    return math.prod(shape)


def _element_size(dtype: Any) -> int:
    name = str(dtype).lower()
    if any(k in name for k in ("bfloat16", "half", "float16")):
        return 2
    return 8 if any(k in name for k in ("double", "int64", "long")) else 4


@dataclass
class StepProfile:
    """One step seen by :func:`profile_step`. ``peak_bytes``: the CPU allocator's peak above the start.
    ``calls``: c10d operators called, by kind. ``backend``: per backend operation (``all_reduce``, ...)
    its count, bytes (the whole tensor) and ring wire bytes per rank. Empty ``backend`` where the
    backend records no shapes (then the bytes are not measured)."""

    peak_bytes: int = 0
    calls: dict[str, int] = field(default_factory=dict)
    backend: dict[str, dict[str, float]] = field(default_factory=dict)


@contextmanager
def profile_step(world: int) -> Iterator[StepProfile]:
    """Profile a block (one training step) with ``torch.profiler`` on the CPU: the allocator's own
    memory events (every allocation and free, also the storage resizes FSDP2 uses to free gathered
    weights) give the peak; the c10d operators give what was asked for; the backend's events (gloo
    names them ``gloo:all_reduce`` etc., with the tensor's shape and dtype) give what ran and its
    size. Used by: lesson 11's script, course_utils/fsdp_train.py."""
    from torch.profiler import ProfilerActivity, profile

    from .profiling import quiet_kineto

    result = StepProfile()
    with quiet_kineto(), profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        yield result
    live = 0
    for e in sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns()):
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU:
            live += e.nbytes()
            result.peak_bytes = max(result.peak_bytes, live)
    for e in prof.events():
        if e.name in C10D_OPS:
            result.calls[C10D_OPS[e.name]] = result.calls.get(C10D_OPS[e.name], 0) + 1
    # The backend's events, read from the kineto events themselves: their shapes() and dtypes() exist in
    # every torch from the lesson's floor (2.9) up, while FunctionEvent.input_dtypes is newer than 2.11
    # (without it a bf16 tensor would be counted at 4 bytes per element).
    for e in prof.profiler.kineto_results.events():
        m = re.match(r"^(?:gloo|nccl):_?(all_reduce|all_gather|allgather|reduce_scatter|broadcast)", e.name())
        shapes = e.shapes() if m else None
        if not shapes:
            continue
        op = {"allgather": "all_gather"}.get(m.group(1), m.group(1))
        dtypes = list(e.dtypes()) or ["float"]
        size = _numel(shapes[0]) * _element_size(dtypes[0]) * (world if op == "all_gather" else 1)
        row = result.backend.setdefault(op, {"count": 0, "bytes": 0, "wire_bytes": 0.0})
        row["count"] += 1
        row["bytes"] += size
        row["wire_bytes"] += size * WIRE[op](world)


def show_shard(model: nn.Module, mode: str, first_step: int) -> None:
    """Every rank prints what its first weight is: a DTensor under FSDP2 (global shape, placements,
    the local shard's shape), else a plain tensor; and the step a resumed run starts after."""
    import torch.distributed as dist

    from .ddp_helpers import log

    w = next(model.parameters())
    if hasattr(w, "to_local"):
        log(f"{mode}: first weight is a {type(w).__name__} of global shape {tuple(w.shape)}, placements "
            f"{tuple(w.placements)}; my local shard {tuple(w.to_local().shape)}", every_rank=True)
    if first_step:
        log(f"{mode}: resumed after step {first_step}, world size {dist.get_world_size()}")


def mean_over_ranks(loss: torch.Tensor) -> float:
    """The global batch's mean loss from every rank's mean over its equal share (one all-reduce)."""
    import torch.distributed as dist

    total = loss.detach().clone()
    dist.all_reduce(total)
    return total.item() / dist.get_world_size()


def watch(held: dict[str, int], prof: StepProfile, device: torch.device, mode: str, budget_mb: float,
          cuda_start: int = 0) -> dict:
    """One profiled step's measurements on this rank; raises if its peak passes ``budget_mb`` (0: no
    budget). The peak is what was held at the start plus the allocator's highest point above the
    step's start: on the CPU from the profiler's memory events, on CUDA from
    ``torch.cuda.max_memory_allocated`` (reset before the step) minus ``cuda_start``, the bytes
    allocated when the step began. Both measure the same thing, so nothing else left on the device
    (a previous mode's tensors, the batch) counts. Used by: lesson 11's script, course_utils/fsdp_train.py."""
    import torch.distributed as dist

    if device.type == "cuda":
        rise = max(0, torch.cuda.max_memory_allocated(device) - cuda_start)
    else:
        rise = prof.peak_bytes
    peak = sum(held.values()) + rise
    if budget_mb and peak > budget_mb * 2**20:
        raise MemoryError(f"rank {dist.get_rank()} ({mode}, world size {dist.get_world_size()}) peaked at "
                          f"{peak / 2**20:.2f} MiB, over its budget of {budget_mb:.2f} MiB: shard the model over more ranks")
    return {"held": held, "peak": peak, "calls": prof.calls, "backend": prof.backend}


# ----------------------------------------------------------------------------- checkpoint folders

STEP_DIR = re.compile(r"^step_(\d{6})$")


def step_dir(root: str | Path, step: int) -> Path:
    """The folder of the checkpoint taken after ``step`` steps: ``root/step_000004``."""
    return Path(root) / f"step_{step:06d}"


def complete_checkpoints(root: str | Path) -> list[Path]:
    """Committed checkpoint folders under ``root``, oldest first. A folder counts once it has its
    name (renamed into place only after every rank wrote its files) and DCP's ``.metadata`` (written
    last, by the coordinator); an interrupted save's ``.tmp`` folder never matches."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and STEP_DIR.match(p.name) and (p / ".metadata").is_file()]
    return sorted(found)


def tmp_dir(root: str | Path, step: int) -> Path:
    """Where a save of ``step`` writes before it is committed (the same name on every rank)."""
    return Path(root) / f".step_{step:06d}.tmp"


def commit(root: str | Path, step: int) -> Path:
    """Rename a finished save's temporary folder onto its real name (rank 0 only, after a barrier),
    like lesson 07's files: ``os.replace`` then ``fsync`` of the folder. Refuses to replace an
    existing checkpoint: a step is saved once. Used by: lesson 11's script, course_utils/fsdp_train.py."""
    src, dst = tmp_dir(root, step), step_dir(root, step)
    if dst.exists():
        raise FileExistsError(f"{dst} exists already: not overwriting a committed checkpoint")
    os.replace(src, dst)
    fsync_dir(Path(root))
    return dst


def clear_tmp(root: str | Path, step: int) -> None:
    """Remove what an earlier, interrupted save of ``step`` left (rank 0, before a new save)."""
    shutil.rmtree(tmp_dir(root, step), ignore_errors=True)


def check_compatible(folder: str | Path, state: dict[str, Any], prefix: str = "model.") -> None:
    """Refuse, before anything is loaded, a DCP checkpoint saved from another model: every tensor of
    ``state`` (under ``prefix`` in the checkpoint) must be there with the same global shape. The
    message names the first mismatch; nothing is read into the model. Used by: lesson 11's script
    (course_utils/fsdp_train.py) and the deeper part of lesson 11."""
    from torch.distributed.checkpoint import FileSystemReader

    folder = Path(folder)
    if not (folder / ".metadata").is_file():
        raise FileNotFoundError(f"{folder} is not a committed DCP checkpoint (no .metadata file)")
    saved = FileSystemReader(str(folder)).read_metadata().state_dict_metadata
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            continue
        name = prefix + key
        if name not in saved:
            raise ValueError(f"{folder.name} was saved from another model: it has no {name!r} "
                             f"(it holds {len(saved)} entries, e.g. {sorted(saved)[:2]})")
        have = tuple(getattr(saved[name], "size", ()))
        if have != tuple(value.shape):
            raise ValueError(f"{folder.name} was saved from another model: {name!r} has shape {have} there, "
                             f"{tuple(value.shape)} here")


__all__ = ["C10D_OPS", "FSDP2_CPU_FLOOR", "WIRE", "StepProfile", "TorchTooOld", "check_compatible", "clear_tmp", "commit", "complete_checkpoints",
           "fsdp2_floor_problem", "fsdp_api", "full_value", "global_batch", "held_bytes", "init_weights_", "make_model", "mean_over_ranks",
           "my_rows", "profile_step", "require_fsdp2", "show_shard", "step_dir", "tmp_dir", "watch"]
