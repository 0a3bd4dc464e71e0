"""course_utils.kernels: the client of the kernels the course starts headless waits in slices.

A missed wakeup is made for real here: zmq.asyncio learns of a message from ZeroMQ's edge-triggered
file descriptor, and a plain (non-asyncio) zmq_poll on the same socket consumes that edge, as
whatever consumed it did in `.ci/run` 31 (lesson 02 idle for 600 s, then passing). A stock
channel then finds the waiting message only at the end of its timeout; the course's within a slice.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from queue import Empty

import pytest
import zmq
import zmq.asyncio
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.session import Session

from course_utils.kernels import SLICE_S, LocalKernelClient, LocalKernelManager, SlicedWaitChannel


async def _seconds_to_a_missed_message(channel_class, tmp_path: Path, timeout: float) -> float:
    """Seconds a channel's get_msg(timeout) takes to return a message whose wakeup was consumed."""
    session, url = Session(), f"ipc://{tmp_path}/channel"
    ctx, peer_ctx = zmq.asyncio.Context(), zmq.Context()
    sock, peer = ctx.socket(zmq.PAIR), peer_ctx.socket(zmq.PAIR)
    try:
        sock.bind(url)
        peer.connect(url)
        channel = channel_class(sock, session)
        session.send(peer, "status", {"execution_state": "idle"})  # a first message: the FD is watched
        assert (await channel.get_msg(timeout=5))["content"] == {"execution_state": "idle"}
        start = time.monotonic()
        waiting = asyncio.ensure_future(channel.get_msg(timeout=timeout))
        await asyncio.sleep(0.1)
        session.send(peer, "execute_reply", {"status": "ok"})
        # A plain zmq_poll on the same socket: it waits (without letting asyncio run) until the message
        # is there, and in doing so consumes the edge of the file descriptor asyncio is watching.
        assert zmq.Socket.shadow(sock.underlying).poll(5000, zmq.POLLIN)
        msg = await waiting
        assert msg["content"] == {"status": "ok"}
        return time.monotonic() - start
    finally:
        sock.close(linger=0)
        peer.close(linger=0)
        ctx.term()
        peer_ctx.term()


def test_a_missed_wakeup_costs_a_slice_not_the_whole_wait(tmp_path):
    stock = asyncio.run(_seconds_to_a_missed_message(AsyncZMQSocketChannel, tmp_path, timeout=1.5))
    assert stock >= 1.4, f"the control: a stock channel should have waited out its 1.5 s, not {stock:.2f} s"
    sliced = asyncio.run(_seconds_to_a_missed_message(SlicedWaitChannel, tmp_path, timeout=1.5))
    assert sliced < SLICE_S + 0.4, f"the course's channel took {sliced:.2f} s (slices of {SLICE_S} s)"


def test_nothing_sent_is_empty_after_the_whole_timeout_not_the_first_slice(tmp_path):
    async def wait() -> float:
        ctx = zmq.asyncio.Context()
        sock = ctx.socket(zmq.PAIR)
        sock.bind(f"ipc://{tmp_path}/quiet")
        start = time.monotonic()
        try:
            with pytest.raises(Empty):
                await SlicedWaitChannel(sock, Session()).get_msg(timeout=2 * SLICE_S + 0.2)
            return time.monotonic() - start
        finally:
            sock.close(linger=0)
            ctx.term()

    assert asyncio.run(wait()) >= 2 * SLICE_S + 0.2


def test_the_manager_hands_out_the_sliced_client():
    """What nbclient and papermill get from `kernel_manager_class=LocalKernelManager` (make run,
    make outputs and the lessons' runs in the tests)."""
    km = LocalKernelManager(kernel_name="python3")
    kc = km.client()
    assert isinstance(kc, LocalKernelClient)
    assert kc.shell_channel_class is SlicedWaitChannel and kc.iopub_channel_class is SlicedWaitChannel
