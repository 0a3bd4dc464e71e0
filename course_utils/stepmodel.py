"""Plumbing for lesson 02's model of an epoch: quiet profiling and thread labels.

The teaching code (timing the parts of a step, the model itself) lives in the notebook; this
module only keeps two distractions out of it. Used by: notebook 02.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
from contextlib import contextmanager
from typing import Iterator

# Lines that libkineto (the engine behind torch.profiler) writes straight to file descriptor 2 on
# every start and stop, whatever KINETO_LOG_LEVEL says: status chatter, not warnings.
KINETO_CHATTER = re.compile(r"^(USDT|STAGE):\S+ \S+ \d+:\d+ \S+\.cpp:\d+\]")


@contextmanager
def quiet_kineto() -> Iterator[None]:
    """Run a block with file descriptor 2 captured; afterwards re-emit every line on ``sys.stderr``
    except libkineto's start/stop chatter (``USDT:...`` / ``STAGE:...``).

    Nothing else is lost: real warnings and errors written in the block still appear, just after
    it. Python-level ``sys.stderr`` writes are not touched (they do not go through fd 2 in Jupyter).
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = [line for line in capture.read().decode(errors="replace").splitlines()
                    if not KINETO_CHATTER.match(line)]
            if kept:
                print("\n".join(kept), file=sys.stderr)


def threads_label(n: int) -> str:
    """``'1 CPU thread'`` / ``'16 CPU threads'``: every GPU-vs-CPU verdict names the CPU side it beat."""
    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    return f"{n} CPU thread" + ("" if n == 1 else "s")


def threads_in_note(note: str) -> int | None:
    """The thread count a ledger note such as ``'CPU, 20000 epochs, ..., 1 thread(s)'`` names, or None."""
    m = re.search(r"(\d+) thread", note)
    return int(m.group(1)) if m else None
