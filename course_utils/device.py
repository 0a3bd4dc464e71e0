"""Choosing a device and describing the machine.

Every notebook starts with ``pick_device(DEVICE)``, so the same notebook runs on a CPU-only
laptop, an Apple GPU (MPS) or an NVIDIA GPU (CUDA) without edits.
"""
from __future__ import annotations

import datetime
import os
import platform
import shutil
import subprocess
import sys
from typing import Any

import torch

from .i18n import t

CHOICES = ("auto", "cpu", "cuda", "mps")


def cuda_help() -> str:
    """What to do when CUDA was asked for and is missing, in the lesson's language."""
    return t("Install a CUDA build of PyTorch on a machine with an NVIDIA GPU and driver "
             "(see https://pytorch.org/get-started/locally/), or run the notebook with DEVICE='auto' or 'cpu'.")


class DeviceUnavailableError(RuntimeError):
    """Raised when a notebook asks for a device this machine does not have."""


def mps_available() -> bool:
    """True when Apple's Metal backend can run tensors (macOS on Apple silicon)."""
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def available_devices() -> list[str]:
    """Device types usable here, best first, e.g. ``['cuda', 'cpu']``.

    Used by: notebook 00 and the error message of :func:`pick_device`.
    """
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    if mps_available():
        found.append("mps")
    found.append("cpu")
    return found


def pick_device(requested: str = "auto") -> torch.device:
    """Return the device a notebook should use.

    ``"auto"`` picks CUDA, then MPS, then CPU. Asking for a device that is not present raises
    :class:`DeviceUnavailableError` saying what is available and how to get it.
    An index is allowed (``"cuda:1"``). Used by: every notebook.
    """
    req = str(requested).strip().lower()
    kind, _, index = req.partition(":")
    if kind not in CHOICES or (index and (kind == "auto" or not index.isdigit())):
        raise ValueError(t("DEVICE must be one of {choices} (optionally 'cuda:N'), got {requested!r}",
                           choices=CHOICES, requested=requested))
    have = available_devices()
    if kind == "auto":
        return torch.device(have[0])
    if kind not in have:
        why = {
            "cuda": (t("this PyTorch build ({version}) has no CUDA support. ", version=torch.__version__)
                     if torch.version.cuda is None else
                     t("this PyTorch build ({version}) found no usable NVIDIA GPU. ", version=torch.__version__))
            + cuda_help(),
            "mps": t("MPS needs macOS 12.3+ on Apple silicon with a PyTorch build that includes it."),
        }[kind]
        raise DeviceUnavailableError(
            t("DEVICE={requested!r} is not available on this machine; available: {have}. {why}",
              requested=requested, have=have, why=why)
        )
    if kind == "cuda" and index and int(index) >= torch.cuda.device_count():
        raise DeviceUnavailableError(
            t("DEVICE={requested!r}: this machine has {count} CUDA device(s).", requested=requested,
              count=torch.cuda.device_count())
        )
    return torch.device(req)


def synchronize(device: torch.device | str) -> None:
    """Wait until all work queued on ``device`` has finished (a no-op on CPU).

    GPU calls return before the GPU is done; a timer read without this measures only the launch.
    Used by: course_utils.timing, and the lessons that time GPU work in their own cells.
    """
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type == "mps":
        torch.mps.synchronize()


def cpu_model() -> str:
    """The CPU's marketing name where the OS tells it (Linux /proc/cpuinfo, macOS sysctl)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        import subprocess

        out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    return platform.processor() or platform.machine()


def nvidia_driver_version() -> str | None:
    """The NVIDIA driver's version (e.g. ``"580.95.05"``), or ``None`` where there is no driver.

    PyTorch reports the CUDA runtime it was built with (``torch.version.cuda``) but not the
    driver, and the driver decides which runtimes can work (a CUDA 13 wheel needs R580+).
    Asks NVML through ``pynvml`` when it is installed, otherwise ``nvidia-smi
    --query-gpu=driver_version`` (both ship with the driver). Used by: :func:`environment_report`.
    """
    try:
        import pynvml  # optional: the nvidia-ml-py package

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # not installed, or no driver: fall back to the command-line tool
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else None


def one_process_all_reduce(backend: str, device: torch.device | str = "cpu", timeout_s: float = 60.0) -> None:
    """Run a real ``all_reduce`` in a one-process group of ``backend``; raise if it fails.

    ``torch.distributed.is_gloo_available()`` only says the backend was compiled in. This
    initialises it (an in-memory ``HashStore`` instead of a network rendezvous), runs one
    collective on ``device``, checks the result and tears the group down again. Two-process
    runs are lesson 09's job. Used by: notebook 00.
    """
    import torch.distributed as dist

    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
    if dist.is_initialized():
        raise RuntimeError("a process group is already initialised in this process")
    dev = torch.device(device)
    bind = {}
    if backend == "nccl":  # bind the group to one GPU, as torchrun scripts do (no 'guessing' warning)
        bind["device_id"] = dev if dev.index is not None else torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=timeout_s), **bind)
    try:
        t = torch.arange(4, dtype=torch.float32, device=dev)
        dist.all_reduce(t)                      # the sum over one rank is the tensor itself
        if not torch.equal(t.cpu(), torch.arange(4, dtype=torch.float32)):
            raise RuntimeError(f"{backend} all_reduce returned {t.tolist()}")
    finally:
        dist.destroy_process_group()


def environment_report() -> dict[str, Any]:
    """Versions and hardware as a plain dict (JSON-serialisable).

    Used by: notebook 00 and the headless runner (stored with every results file).
    """
    report: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda_build": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "mps_available": mps_available(),
        "distributed_available": torch.distributed.is_available(),
        "nccl_available": bool(torch.distributed.is_available() and torch.distributed.is_nccl_available()),
        "gloo_available": bool(torch.distributed.is_available() and torch.distributed.is_gloo_available()),
        "nvidia_driver": nvidia_driver_version(),
        "gpus": [],
    }
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            report["gpus"].append(
                {
                    "index": i,
                    "name": p.name,
                    "compute_capability": f"{p.major}.{p.minor}",
                    "memory_gib": round(p.total_memory / 2**30, 1),
                    "multiprocessors": p.multi_processor_count,
                }
            )
    report["executable"] = sys.executable
    return report
