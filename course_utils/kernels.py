"""The kernel manager for the kernels the course starts headless (make run, make outputs, the tests).

Why: ipykernel warns "Kernel is running over TCP without encryption" at every start on TCP, once
per lesson in ``make run``'s output. A kernel started by this machine, for this machine, needs no
network port at all: on POSIX the kernel and its client talk over Unix-domain sockets (ZeroMQ's
``ipc`` transport) in Jupyter's private runtime folder (mode 0700), which nothing else can reach,
so the warning's cause is gone rather than filtered. Windows has no ``ipc`` transport: TCP there.
"""
from __future__ import annotations

import os
import uuid

from jupyter_client import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import default


class LocalKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` (nbclient's and papermill's default) that prefers the ipc transport."""

    @default("transport")
    def _default_transport(self) -> str:
        return "ipc" if os.name == "posix" else "tcp"

    @default("ip")
    def _default_ip(self) -> str:
        """For ipc, an absolute socket path prefix: jupyter_client's default ("kernel-ipc") is relative,
        and a kernel started in the notebook's folder would bind where its client does not look."""
        if self.transport != "ipc":
            return super()._ip_default()
        runtime = jupyter_runtime_dir()
        os.makedirs(runtime, mode=0o700, exist_ok=True)
        return os.path.join(runtime, f"course-kernel-{uuid.uuid4().hex[:12]}")
