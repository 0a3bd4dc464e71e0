"""The torchrun side of launching a job: the command line, the workers' environment, and reading
the failure report torchrun prints. No process is started here (that is :mod:`course_utils.supervise`
and :func:`course_utils.launch.launch`).
"""
from __future__ import annotations

import ipaddress
import os
import shlex
import socket
import sys
from typing import Mapping, Sequence

from course_utils.paths import REPO

LOOPBACK = "127.0.0.1"
IS_WINDOWS = os.name == "nt"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it). Another program may take it
    before it is used, so single-node jobs do not need it (``--standalone`` lets the OS pick and keeps
    the socket); notebook 09 uses it only for the rendezvous endpoint of its two-node demo."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def usable_cpus() -> int:
    """CPUs this process may run on (respects affinity masks and containers where visible)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.x.x.x, ::1). Names are not looked up:
    a job between machines must name a host the other machines can reach."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_gpus(nproc_per_node: int, backend: str | None) -> None:
    """Refuse, before anything starts, an NCCL job with more ranks on this node than visible GPUs:
    NCCL needs one GPU per rank, and otherwise every extra rank fails on its own with
    "invalid device ordinal". (The count is what this process sees, through CUDA_VISIBLE_DEVICES.)"""
    if backend != "nccl":
        return
    import torch  # only here: the launcher itself does not need torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    where = f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}"
    if visible == 0:
        raise ValueError(f"backend 'nccl' needs NVIDIA GPUs, and no GPU is visible here ({where}): "
                         "use backend 'gloo' on the CPU")
    if nproc_per_node > visible:
        raise ValueError(
            f"nproc_per_node={nproc_per_node} with backend 'nccl' needs {nproc_per_node} GPUs on this node, "
            f"one per rank, but {visible} {'GPU is' if visible == 1 else 'GPUs are'} visible ({where}): "
            f"use nproc_per_node <= {visible}, or backend 'gloo' on the CPU")


def torchrun_command(
    target: str,
    args: Sequence[str] = (),
    *,
    nproc_per_node: int = 1,
    nnodes: int = 1,
    rdzv_endpoint: str | None = None,
    rdzv_id: str = "course",
    module: bool = True,
    monitor_interval: float = 0.2,
    backend: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The argument list for ``python -m torch.distributed.run`` (the module behind ``torchrun``).

    One node: ``--standalone`` (torchrun binds a free port itself and keeps it, no race with other
    jobs) and ``--local-addr=127.0.0.1``. Several nodes: ``--rdzv-backend=c10d
    --rdzv-endpoint=HOST:PORT``; every node runs the same command, and ranks are assigned in the
    order the nodes join. ``--local-addr=127.0.0.1`` is added only when HOST is loopback (nodes
    simulated on this machine): on real hosts rank 0 would advertise an address nobody else can
    reach, and the job would hang. On real hosts with several network interfaces choose the one
    the nodes share with ``NCCL_SOCKET_IFNAME`` (NCCL; e.g. ``=eth0``, or ``^docker,lo`` to exclude;
    https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html) and ``GLOO_SOCKET_IFNAME``
    (gloo; e.g. ``eth0``; https://pytorch.org/docs/stable/distributed.html#choosing-the-network-interface-to-use).

    ``backend="nccl"`` checks that this node has a GPU per rank (:func:`check_gpus`). ``target`` is a
    module name (``module=True``, run as ``python -m target``) or a script path; ``extra`` holds more
    torchrun options (e.g. ``["--max-restarts=1"]``). Used by: notebooks 09 and 11.
    """
    check_gpus(nproc_per_node, backend)
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc_per_node}",
           f"--monitor-interval={monitor_interval}"]
    if nnodes == 1 and rdzv_endpoint is None:
        cmd += ["--standalone", f"--local-addr={LOOPBACK}"]
    else:
        if rdzv_endpoint is None:
            raise ValueError("several nodes need rdzv_endpoint='HOST:PORT' (the same on every node)")
        cmd += [f"--nnodes={nnodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint={rdzv_endpoint}",
                f"--rdzv-id={rdzv_id}"]
        if is_loopback(rdzv_endpoint.rsplit(":", 1)[0]):
            cmd.append(f"--local-addr={LOOPBACK}")
    cmd += list(extra) + (["-m", target] if module else [target]) + [str(a) for a in args]
    return cmd


def format_command(cmd: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The command as a shell line, with this interpreter shown as ``python`` and ``env`` (if any)
    as ``NAME=value`` assignments in front."""
    assignments = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()]
    return " ".join(assignments + [shlex.join(["python" if c == sys.executable else c for c in cmd])])


def child_environment(nproc_per_node: int, extra: dict[str, str] | None = None, *,
                      loopback: bool = True) -> dict[str, str]:
    """The environment for a job started from this machine.

    - ``PYTHONUNBUFFERED=1``: workers' lines arrive as they are printed, not in blocks;
    - ``OMP_NUM_THREADS``: the machine's cores shared out between the local processes
      (torchrun would otherwise set 1 and print a warning);
    - ``OMP_WAIT_POLICY=PASSIVE``: idle OpenMP threads sleep instead of spinning, so processes that
      share cores (with each other or with other programs) do not burn each other's time;
    - ``PYTHONPATH`` starts with the repository, so ``-m course_utils....`` imports in the workers;
    - ``GLOO_SOCKET_IFNAME``: the loopback interface (``lo``, ``lo0`` on macOS), only for jobs that
      talk over 127.0.0.1 (``loopback=True``, every job of notebook 09): without it gloo uses the
      interface the host name resolves to, which may be unreachable. A job between machines gets no
      such setting (it would hang): set ``GLOO_SOCKET_IFNAME`` / ``NCCL_SOCKET_IFNAME`` yourself to
      the interface the machines share when they have several (see :func:`torchrun_command`);
    - ``USE_LIBUV=0`` on Windows, whose PyTorch builds lack libuv for the TCP store.
    """
    env = dict(os.environ)
    env.pop("COURSE_LEDGER", None)  # workers must not rewrite the notebook's ledger
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_NUM_THREADS", str(max(1, usable_cpus() // max(1, nproc_per_node))))
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    if loopback and "GLOO_SOCKET_IFNAME" not in env and sys.platform.startswith("linux"):
        env["GLOO_SOCKET_IFNAME"] = "lo"
    elif loopback and "GLOO_SOCKET_IFNAME" not in env and sys.platform == "darwin":
        env["GLOO_SOCKET_IFNAME"] = "lo0"
    if IS_WINDOWS:
        env.setdefault("USE_LIBUV", "0")
    env.update(extra or {})
    return env


def root_cause(output: str) -> str | None:
    """The failing rank and its exception from torchrun's failure report, e.g.
    ``rank 1: RuntimeError: simulated failure``; None if the output holds no such report."""
    lines = output.splitlines()
    start = max((i for i, line in enumerate(lines) if "Root Cause" in line), default=None)
    if start is None:
        return None
    rank, message = None, None
    for line in lines[start + 1:]:
        text = line.strip()
        if text.startswith("=" * 10):
            break
        if text.startswith("rank ") and ":" in text and rank is None:
            rank = "rank " + text.split(":", 1)[1].strip()
        elif text.startswith("traceback") and ":" in text:
            value = text.split(":", 1)[1].strip()  # e.g. "Signal 9 (SIGKILL) received by PID 123"
            message = None if value.startswith("Traceback") else value
        elif text and not text.startswith(("File ", "^", "traceback", "time", "host", "exitcode", "error_file", "[")):
            message = text  # the last such line of the traceback is the exception
    return f"{rank or 'a rank'}: {message}" if message else rank


def _nproc_of(cmd: Sequence[str]) -> int:
    """The ``--nproc-per-node`` of a torchrun command (1 if absent or not a number)."""
    for arg in cmd:
        if arg.startswith(("--nproc-per-node=", "--nproc_per_node=")):
            value = arg.split("=", 1)[1]
            return int(value) if value.isdigit() else 1
    return 1


def _loopback_job(cmd: Sequence[str]) -> bool:
    """False if the command names a rendezvous or master host that is not loopback."""
    for arg in cmd:
        for option in ("--rdzv-endpoint=", "--rdzv_endpoint=", "--master-addr=", "--master_addr="):
            if arg.startswith(option) and not is_loopback(arg[len(option):].rsplit(":", 1)[0]):
                return False
    return True
