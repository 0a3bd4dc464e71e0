"""Plumbing for lesson 02's model of an epoch: thread labels.

The teaching code (timing the parts of a step, the model itself) lives in the notebook; this
module only keeps a distraction out of it (quiet profiling is ``profiling.quiet_kineto``).
Used by: notebook 02.
"""
from __future__ import annotations

import re


def threads_label(n: int) -> str:
    """``'1 CPU thread'`` / ``'16 CPU threads'``: every GPU-vs-CPU verdict names the CPU side it beat."""
    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    return f"{n} CPU thread" + ("" if n == 1 else "s")


def threads_in_note(note: str) -> int | None:
    """The thread count a ledger note such as ``'CPU, 20000 epochs, ..., 1 thread(s)'`` names, or None."""
    m = re.search(r"(\d+) thread", note)
    return int(m.group(1)) if m else None
