"""What a lesson chooses for the device it finds, and the one-line reason it prints.

Every choice is a pure function of :class:`DeviceProps` (plain data: name, capability, memory, SM
count, device count), so the CUDA branches are tested with the properties of a T4, a P100, an H200 or
a Kaggle box of two T4s on a machine that has no GPU at all; :func:`props_of` reads the real ones.

- :func:`amp_choice`: bf16 autocast where the GPU has bf16 Tensor Cores (compute capability >= 8.0,
  which is what ``torch.cuda.is_bf16_supported(including_emulation=False)`` checks), else fp16 with a
  GradScaler (T4, V100, P100: ``torch.cuda.is_bf16_supported()`` with its default
  ``including_emulation=True`` answers True there too, because bf16 tensors can be *created*; their
  matmuls then run without Tensor Cores). MPS: fp16. CPU: fp32, or bf16 where a lesson teaches it.
- :func:`pick_size`: the largest candidate problem size whose predicted bytes fit in free memory x 0.8.
- :func:`peak_for`: the datasheet peak a measured rate is divided by for "% of peak".
- :func:`ddp_plan`: lesson 09's backend and world sizes from the GPUs present.
- :func:`kernel_support`: whether this torch build has kernels for the GPU (PyTorch >= 2.11's default
  CUDA 12.8/13.0 wheels start at compute capability 7.5: no P100, no V100).
Used by: notebooks 04, 06, 08, 09, and lesson seven through course_utils.actckpt.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from .hardware import GpuSpec, find_spec

BF16_TENSOR_CORES = (8, 0)  # Ampere and newer; torch.cuda.is_bf16_supported(including_emulation=False)
FREE_MEMORY_MARGIN = 0.8  # a size may use this fraction of the free memory: the rest is for the CUDA context,
# cuBLAS/cuDNN workspaces, the caching allocator's rounding and fragmentation


@dataclass(frozen=True)
class DeviceProps:
    """What the choices need to know about one device, as data (``props_of`` reads the real one).

    ``kind`` is "cuda", "mps" or "cpu"; ``capability`` CUDA's (major, minor); memory in bytes;
    ``device_count`` the CUDA GPUs this process sees; ``arch_list`` the torch build's
    ``torch.cuda.get_arch_list()`` (empty: unknown).
    """

    kind: str
    name: str = ""
    capability: tuple[int, int] | None = None
    total_bytes: int | None = None
    free_bytes: int | None = None
    sm_count: int | None = None
    device_count: int = 0
    arch_list: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.kind not in ("cuda", "mps", "cpu"):
            raise ValueError(f"kind must be 'cuda', 'mps' or 'cpu', got {self.kind!r}")
        if self.kind == "cuda" and self.capability is None:
            raise ValueError("a CUDA device needs its compute capability (major, minor)")
        if self.free_bytes is not None and self.total_bytes is not None and not 0 <= self.free_bytes <= self.total_bytes:
            raise ValueError(f"free memory ({self.free_bytes} B) must be between 0 and the total ({self.total_bytes} B)")

    @property
    def label(self) -> str:
        if self.kind != "cuda":
            return self.name or self.kind
        return f"{self.name} (compute capability {self.capability[0]}.{self.capability[1]})"


def props_of(device: torch.device | str) -> DeviceProps:
    """The real properties of ``device`` (``torch.cuda.get_device_properties`` and ``mem_get_info`` on CUDA)."""
    device = torch.device(device)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        p = torch.cuda.get_device_properties(index)
        free, total = torch.cuda.mem_get_info(index)
        return DeviceProps("cuda", p.name, (p.major, p.minor), int(total), int(free), p.multi_processor_count,
                           torch.cuda.device_count(), tuple(torch.cuda.get_arch_list()))
    if device.type == "mps":
        return DeviceProps("mps", "Apple GPU (MPS)")
    return DeviceProps("cpu", "CPU")


@dataclass(frozen=True)
class AmpChoice:
    """The autocast dtype (``None``: no autocast, fp32) and whether a GradScaler is needed."""

    dtype: torch.dtype | None
    use_scaler: bool
    reason: str

    @property
    def mode(self) -> str:
        return {torch.bfloat16: "bf16", torch.float16: "fp16", None: "fp32"}[self.dtype]


def has_bf16_tensor_cores(props: DeviceProps) -> bool:
    """``torch.cuda.is_bf16_supported(including_emulation=False)`` for these properties: capability >= 8.0."""
    return props.kind == "cuda" and props.capability >= BF16_TENSOR_CORES


def amp_choice(props: DeviceProps, *, cpu_bf16: bool = False) -> AmpChoice:
    """The mixed-precision setting for this device, with the reason a lesson prints.

    CUDA >= 8.0: bf16, no scaler (bf16 has fp32's exponent range, so gradients do not underflow).
    CUDA < 8.0: fp16 + GradScaler: a T4 (7.5) and a V100 (7.0) have fp16 Tensor Cores and no bf16 ones;
    a P100 (6.0) has no Tensor Cores, but runs fp16 at twice its fp32 rate. MPS: fp16 + GradScaler
    (bf16 tensors on MPS need macOS 14). CPU: fp32, unless the lesson
    teaches bf16 autocast on the CPU (``cpu_bf16=True``): bf16, no scaler.
    """
    if props.kind == "cuda":
        cap = f"{props.capability[0]}.{props.capability[1]}"
        if has_bf16_tensor_cores(props):
            return AmpChoice(torch.bfloat16, False, f"{props.name} (compute capability {cap}) has bf16 Tensor Cores "
                             "(capability >= 8.0): bf16 autocast, no GradScaler needed")
        cores = ("fp16 Tensor Cores and no bf16 ones" if props.capability >= (7, 0)
                 else "no Tensor Cores (fp16 runs at 2x its fp32 rate on the CUDA cores)")
        return AmpChoice(torch.float16, True, f"{props.name} (compute capability {cap}) has {cores}: "
                         "fp16 autocast with a GradScaler (bf16 would run without Tensor Cores here)")
    if props.kind == "mps":
        return AmpChoice(torch.float16, True, "MPS: fp16 autocast with a GradScaler, as lesson 06 runs it there "
                         "(bf16 on MPS needs macOS 14)")
    if cpu_bf16:
        return AmpChoice(torch.bfloat16, False, "CPU: bf16 autocast, what this lesson measures on a CPU "
                         "(fast only with AVX512-BF16 or AMX; no scaler: bf16 has fp32's range)")
    return AmpChoice(None, False, "CPU: fp32 (no 16-bit speed-up to expect without bf16 hardware)")


@dataclass(frozen=True)
class SizeChoice:
    size: int
    predicted_bytes: int
    reason: str


def pick_size(candidates: Sequence[int], bytes_of: Callable[[int], int], free_bytes: int, *,
              margin: float = FREE_MEMORY_MARGIN, what: str = "size") -> SizeChoice:
    """The largest candidate whose predicted bytes (``bytes_of(size)``) fit in ``free_bytes * margin``.

    Raises ``ValueError`` with one sentence when not even the smallest candidate fits.
    """
    if not candidates:
        raise ValueError("pick_size needs at least one candidate size")
    if not 0 < margin <= 1 or free_bytes < 0:
        raise ValueError(f"need 0 < margin <= 1 and free_bytes >= 0; got {margin}, {free_bytes}")
    budget = int(free_bytes * margin)
    fitting = [(c, bytes_of(c)) for c in sorted(set(candidates)) if bytes_of(c) <= budget]
    if not fitting:
        smallest = min(candidates)
        raise ValueError(f"not even the smallest {what} ({smallest}) fits: it needs about "
                         f"{bytes_of(smallest) / 2**30:.2f} GiB, and {margin:.0%} of the free "
                         f"{free_bytes / 2**30:.2f} GiB is {budget / 2**30:.2f} GiB")
    size, need = fitting[-1]
    largest = max(candidates)
    tail = "the largest candidate" if size == largest else f"{largest} would need {bytes_of(largest) / 2**30:.2f} GiB"
    return SizeChoice(size, need, f"{what} {size}: predicted {need / 2**30:.2f} GiB, within {margin:.0%} of the "
                      f"{free_bytes / 2**30:.2f} GiB free ({tail})")


@dataclass(frozen=True)
class PeakChoice:
    tflops: float | None  # or TB/s for "bandwidth"; None: no datasheet figure
    spec: GpuSpec | None
    reason: str


def peak_for(props_or_spec: DeviceProps | GpuSpec | None, kind: str) -> PeakChoice:
    """The datasheet peak for a measured ``kind``: "fp32", "tf32", "bf16", "fp16" (dense TFLOP/s) or "bandwidth" (TB/s).

    ``None`` (with the reason) where the card is not in the table, or has no such unit: no BF16 Tensor
    Cores on a T4/V100/P100, no figures at all for an A10G. TF32 before Ampere is not a mode: a
    TF32-allowed fp32 matmul runs in fp32 there, so its peak is the FP32 one.
    """
    if kind not in ("fp32", "tf32", "bf16", "fp16", "bandwidth"):
        raise ValueError(f"kind must be fp32, tf32, bf16, fp16 or bandwidth, got {kind!r}")
    if isinstance(props_or_spec, DeviceProps):
        if props_or_spec.kind != "cuda":
            return PeakChoice(None, None, f"{props_or_spec.label}: no datasheet figure (the table holds NVIDIA GPUs)")
        spec = find_spec(props_or_spec.name, props_or_spec.total_bytes)
        if spec is None:
            return PeakChoice(None, None, f"no datasheet figure for this card ({props_or_spec.name!r} is not in the "
                              "spec table, or is a MIG slice / laptop / variant part)")
    elif props_or_spec is None:
        return PeakChoice(None, None, "no datasheet figure for this card")
    else:
        spec = props_or_spec
    unit = "TB/s" if kind == "bandwidth" else "TFLOP/s"
    value = {"fp32": spec.fp32_tflops, "tf32": spec.tf32_tflops, "bf16": spec.bf16_tflops, "fp16": spec.half_tflops,
             "bandwidth": spec.bandwidth_tbs}[kind]
    if kind == "tf32" and value is None and spec.fp32_tflops is not None:
        return PeakChoice(spec.fp32_tflops, spec, f"{spec.name} has no TF32 Tensor Cores (before Ampere): a "
                          f"TF32-allowed matmul runs in fp32, so its peak is the FP32 {spec.fp32_tflops:g} {unit}")
    if value is None:
        why = ("no bf16 Tensor Cores" if kind == "bf16" and spec.half_tflops is not None
               else "no published figure")
        return PeakChoice(None, spec, f"no datasheet figure for this card's {kind} ({spec.name}: {why})")
    dense = "" if kind in ("fp32", "bandwidth") else " dense"
    return PeakChoice(value, spec, f"{spec.name}{dense} {kind} peak {value:g} {unit} ({spec.source.split(',')[0]})")


@dataclass(frozen=True)
class DdpPlan:
    backend: str  # of the multi-process runs: "nccl" (one process per GPU) or "gloo" (CPU tensors)
    world_size: int  # processes of the multi-process runs
    nccl_sizes: tuple[int, ...]  # GPU counts to run with NCCL, one process per GPU
    reason: str


def ddp_plan(props: DeviceProps, *, cpu_processes: int = 2) -> DdpPlan:
    """Lesson 09's backend and world sizes from the GPUs this process sees.

    >= 2 GPUs (Kaggle's 2 x T4, a lab server): NCCL, one process per GPU, at 1, 2, 4, 8 GPUs as present.
    1 GPU: NCCL runs with one process only. Two NCCL ranks cannot share one GPU: NCCL's communicator
    refuses it ("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device ...", ncclInvalidUsage,
    reported for NCCL 2.17-2.20 in NVIDIA/nccl#1241 and NVIDIA/Megatron-LM#661), so the multi-process runs
    use gloo processes with CPU tensors. No GPU: gloo on the CPU, ``cpu_processes`` processes.
    """
    gpus = props.device_count if props.kind == "cuda" else 0
    if gpus >= 2:
        sizes = tuple(k for k in (1, 2, 4, 8) if k <= gpus)
        return DdpPlan("nccl", gpus, sizes, f"{gpus} GPUs ({props.name}): NCCL with one process per GPU, "
                       f"runs at {', '.join(map(str, sizes))} GPU(s); the CPU runs use gloo")
    if gpus == 1:
        return DdpPlan("gloo", cpu_processes, (1,), f"1 GPU ({props.name}): NCCL needs one GPU per process (two "
                       "ranks on one GPU fail with 'Duplicate GPU detected'), so NCCL runs with 1 process and the "
                       f"{cpu_processes}-process runs use gloo with CPU tensors; a scaling table needs >= 2 GPUs")
    return DdpPlan("gloo", cpu_processes, (), f"no CUDA GPU here: {cpu_processes} gloo processes on the CPU; "
                   "the NCCL runs need NVIDIA GPUs")


def kernel_support(props: DeviceProps) -> tuple[bool, str]:
    """Whether this torch build carries kernels for the GPU, from ``props.arch_list`` (``get_arch_list()``).

    A build runs on capability X.Y when it has ``sm_XY`` or an ``sm_X*`` of lower minor (the same major:
    binary compatible), or PTX (``compute_ZW``) of a capability <= X.Y, which the driver compiles.
    PyTorch >= 2.11's CUDA 12.8 and 13.0 wheels start at sm_75, so a P100 (6.0) or V100 (7.0) needs the
    CUDA 12.6 build (https://download.pytorch.org/whl/cu126). Unknown arch list: (True, "unknown").
    """
    if props.kind != "cuda":
        return True, f"{props.label}: not a CUDA device"
    if not props.arch_list:
        return True, "this torch build's CUDA architectures are unknown"
    major, minor = props.capability
    ok = False
    for arch in props.arch_list:
        kind, _, num = arch.partition("_")
        digits = "".join(ch for ch in num if ch.isdigit())
        if not digits:
            continue
        a_major, a_minor = int(digits[:-1]), int(digits[-1])
        if kind == "sm" and a_major == major and a_minor <= minor:
            ok = True
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            ok = True
    built = " ".join(props.arch_list)
    if ok:
        return True, f"this torch build has kernels for sm_{major}{minor} ({built})"
    return False, (f"this torch {torch.__version__} build has no kernels for {props.label} (it has {built}): "
                   "every CUDA operation would fail with 'no kernel image is available'. PyTorch >= 2.11's default "
                   "wheels start at compute capability 7.5; install the CUDA 12.6 build: "
                   "pip install torch --index-url https://download.pytorch.org/whl/cu126")
