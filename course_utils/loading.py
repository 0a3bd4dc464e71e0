"""Lesson 08's plumbing: how DataLoader workers start, chosen once so that the lesson's cells stay
about waiting for data (lesson 08's deeper notebook shows why the choice matters)."""
from __future__ import annotations

import multiprocessing as mp
from multiprocessing.context import BaseContext


def worker_context(method: str = "auto") -> BaseContext:
    """The multiprocessing context DataLoader workers start with.

    ``"auto"`` picks forkserver where the platform has it (Linux, macOS), else spawn (Windows): both
    start clean processes, unlike fork, which copies a parent that already runs threads (Jupyter's,
    PyTorch's) and which Python 3.12+ warns about. The fork server imports torch and the lesson's
    dataset module once, up front, so each worker then starts in a fraction of a second instead of
    importing torch again.
    """
    if method == "auto":
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["torch", "course_utils.datasets"])
    return ctx
