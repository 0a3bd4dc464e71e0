"""The kernel manager for the kernels the course starts headless (make run, make outputs, the tests).

Why: ipykernel warns "Kernel is running over TCP without encryption" at every start on TCP, once
per lesson in ``make run``'s output. A kernel started by this machine, for this machine, needs no
network port at all: on POSIX the kernel and its client talk over Unix-domain sockets (ZeroMQ's
``ipc`` transport) in Jupyter's private runtime folder (mode 0700), which nothing else can reach,
so the warning's cause is gone rather than filtered. Windows has no ``ipc`` transport: TCP there.

Its client (``LocalKernelClient``) waits for the kernel's messages in short slices: see
``SlicedWaitChannel``.
"""
from __future__ import annotations

import os
import time
import uuid
from queue import Empty
from typing import Any

from jupyter_client import AsyncKernelManager
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import Type, default

SLICE_S = 0.5  # the longest a missed wakeup can hold back a message the kernel has sent


class SlicedWaitChannel(AsyncZMQSocketChannel):
    """A kernel channel whose waits look at the socket again every ``SLICE_S`` seconds.

    Why: zmq.asyncio hears of a message through ZeroMQ's edge-triggered file descriptor. When that
    edge is missed (consumed elsewhere, or not signalled), ``poll`` finds the waiting message only when
    its timeout ends. nbclient waits for each cell's reply with the cell's whole timeout, so in one
    fresh-clone `.ci/run` lesson 02 sat idle for 600 s after a cell had finished, until nbclient's wait
    ran out and found the reply there. Waiting in slices turns such a miss into half a second."""

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await super().get_msg(timeout=min(SLICE_S, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise


class LocalKernelClient(AsyncKernelClient):
    """nbclient's and papermill's async client, with the shell and IOPub channels waiting in slices."""

    shell_channel_class = Type(SlicedWaitChannel)  # type: ignore[assignment]
    iopub_channel_class = Type(SlicedWaitChannel)  # type: ignore[assignment]


class LocalKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` (nbclient's and papermill's default) that prefers the ipc transport,
    and whose client waits in slices."""

    @default("client_class")
    def _default_client_class(self) -> str:
        return f"{__name__}.LocalKernelClient"

    @default("client_factory")
    def _default_client_factory(self) -> type:
        return LocalKernelClient  # AsyncKernelManager's own default ignores client_class

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
