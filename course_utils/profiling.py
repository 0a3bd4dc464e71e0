"""Plumbing for profiling and ``torch.compile``: where compiled code goes, which compiler it needs,
and keeping the noise of native libraries out of a notebook's outputs.

The teaching code (the profiler, the fixes, ``torch.compile`` itself) is in the lesson; these helpers
only make its runs independent and its stored outputs reproducible.
Used by: notebooks 02, 10.
"""
from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import sys
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

INDUCTOR_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
COMPILE_LOGGERS = ("torch._dynamo", "torch._inductor", "torch.fx.experimental.symbolic_shapes")


def cpp_compiler() -> str | None:
    """Path of the C++ compiler Inductor would call for CPU code, or ``None`` if there is none.

    Inductor looks for ``$CXX``, else ``g++`` (``clang++`` on macOS; ``cl`` on Windows), and
    ``torch.compile`` fails at the first call without it. Checking first lets a lesson say so
    instead of failing.
    """
    if sys.platform == "win32":
        name = os.environ.get("CXX", "cl")
    else:
        name = os.environ.get("CXX") or ("clang++" if sys.platform == "darwin" else "g++")
    return shutil.which(name)


def use_fresh_compile_cache(root: Path) -> Path:
    """Point Inductor's on-disk cache at a new, empty folder under ``root`` for the rest of this process.

    Inductor reuses compiled kernels from ``$TORCHINDUCTOR_CACHE_DIR`` (default: a folder in /tmp
    shared by every process of the user), so a second run would time a cache hit, not a compile.
    A fresh folder per run makes every run measure the same thing; the variable is read at each
    compile, so setting it inside a running process works (before its first compile). The folder is
    deleted when the process exits, or earlier with :func:`remove_compile_cache`.
    """
    root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="inductor-cache-", dir=root))
    os.environ[INDUCTOR_CACHE_ENV] = str(path)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def remove_compile_cache(path: Path) -> None:
    """Delete a folder made by :func:`use_fresh_compile_cache` (compiled functions keep working:
    their code is already loaded)."""
    shutil.rmtree(path, ignore_errors=True)


@contextmanager
def fresh_inductor_caches(root: Path) -> Iterator[None]:
    """A block in which Inductor starts with empty caches, in memory and on disk, as a new process would.

    :func:`use_fresh_compile_cache` keeps one run independent of earlier runs; inside a run, a graph
    compiled a second time (same code, same shapes) still comes from the cache in a fraction of a
    second. To time a real recompile, wrap it in this block: it uses Inductor's own
    ``torch._inductor.utils.fresh_cache`` (``fresh_inductor_cache`` before PyTorch 2.8) with a
    temporary folder under ``root``, deleted afterwards.
    """
    from torch._inductor import utils as inductor_utils

    fresh = getattr(inductor_utils, "fresh_cache", None) or getattr(inductor_utils, "fresh_inductor_cache")
    root.mkdir(parents=True, exist_ok=True)
    with fresh(dir=str(root)):
        yield


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


@dataclass
class Captured:
    """What :func:`quiet_native_stderr` or :func:`quiet_compile` kept out of the notebook."""

    stderr: str = ""
    warnings: list[str] = field(default_factory=list)


@contextmanager
def quiet_native_stderr() -> Iterator[Captured]:
    """Send what C/C++ code writes to file descriptor 2 into a buffer for the block.

    The profiler's C++ library (Kineto) logs every start and stop of a trace with a timestamp and a
    process id; Jupyter shows such lines under the cell, so stored outputs would differ on every run.
    Python's own ``sys.stderr`` (warnings, logging) is not touched. The text is kept in
    ``Captured.stderr`` so nothing is lost.
    """
    captured = Captured()
    try:
        sys.stderr.flush()
    except (AttributeError, ValueError):
        pass
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.stderr = sink.read().decode(errors="replace")


@contextmanager
def quiet_compile() -> Iterator[Captured]:
    """Keep ``torch.compile``'s log lines and warnings out of a cell's output; record the warnings.

    Dynamo logs graph breaks and recompilations at WARNING level with a timestamp and a process id,
    and Inductor may warn (e.g. about TF32 on a GPU): useful at a terminal, but they would make stored
    outputs differ between runs. The lesson prints what it needs from ``explain`` and counters
    instead. Logger levels and warning filters are restored afterwards.
    """
    captured = Captured()
    loggers = [logging.getLogger(name) for name in COMPILE_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield captured
        captured.warnings = [f"{w.category.__name__}: {w.message}" for w in caught]
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def busy_fraction(intervals: list[tuple[float, float]]) -> float:
    """Share of the span from the first start to the last end covered by at least one interval.

    For a GPU: the kernels' (start, end) times from a profile; 1 - this is the share of time the
    GPU sat idle between kernels (waiting for the CPU to launch the next one). Overlapping
    intervals (kernels on several streams) count once.
    """
    spans = sorted((float(a), float(b)) for a, b in intervals if b > a)
    if not spans:
        return 0.0
    covered, cur_start, cur_end = 0.0, spans[0][0], spans[0][1]
    for a, b in spans[1:]:
        if a > cur_end:
            covered += cur_end - cur_start
            cur_start, cur_end = a, b
        else:
            cur_end = max(cur_end, b)
    covered += cur_end - cur_start
    return covered / (max(b for _, b in spans) - spans[0][0])
