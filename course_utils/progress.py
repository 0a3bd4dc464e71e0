"""A live status line for cells that run longer than a few seconds, gone when the cell ends.

Why: a cell that sits at ``[*]`` for 15 s with no output looks hung, and a student restarts the
kernel. Why it leaves nothing behind: nbval compares every stored output with a fresh run, and a
progress bar's text differs on every machine. So the line is one ``display`` with a ``display_id``,
updated in place at most a few times a second, and emptied when the loop or block ends: it starts and
ends as a display with no data at all, which JupyterLab draws as nothing and which nbval (whose
comparison goes by the MIME types present) cannot tell from no output, so plain ``pytest --nbval``
passes without ``COURSE_PROGRESS=0``; the text itself travels in ``update_display_data``. Headless
runs (``make run``, ``make outputs``, the tests: they set ``COURSE_PROGRESS=0``) and plain Python
(no IPython kernel) show nothing at all.

    for size in progress(SIZES, "timing sizes"):
        ...
    with working("training 20,000 epochs"):
        train()
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from typing import Iterable, Iterator, Sized, TypeVar

from .i18n import t

T = TypeVar("T")
_MIN_INTERVAL_S = 0.25  # redraws per second are capped: each one is a message to the frontend


def enabled() -> bool:
    """True inside an IPython kernel unless ``COURSE_PROGRESS=0`` (set by every headless runner)."""
    if os.environ.get("COURSE_PROGRESS", "1") == "0":
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class _Line:
    """One in-place display line; ``show`` is throttled, ``close`` blanks it."""

    def __init__(self) -> None:
        from IPython.display import display

        self._handle = display({}, raw=True, display_id=True)  # an empty bundle: see the module's docstring
        self._last = 0.0

    def show(self, text: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= _MIN_INTERVAL_S:
            self._handle.update(_Text(text))
            self._last = now

    def close(self) -> None:
        self._handle.update({}, raw=True)


class _Text:
    """Plain text for the frontend (no repr quotes); empty text renders as nothing."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": self.text}


def _eta(done: int, total: int | None, elapsed: float) -> str:
    if not total or done == 0 or done >= total:
        return ""
    return t(", about {left:.0f} s left", left=elapsed / done * (total - done))


def progress(items: Iterable[T], label: str, total: int | None = None) -> Iterator[T]:
    """Yield ``items`` unchanged while a line shows ``label: i/total, elapsed, time left``."""
    if total is None and isinstance(items, Sized):
        total = len(items)
    if not enabled():
        yield from items
        return
    line, start, done = _Line(), time.monotonic(), 0
    try:
        for item in items:
            elapsed = time.monotonic() - start
            of = f"/{total}" if total else ""
            line.show(t("{label}: {done}{of} done, {elapsed:.0f} s", label=label, done=done, of=of, elapsed=elapsed)
                      + _eta(done, total, elapsed), force=done == 0)
            yield item
            done += 1
    finally:
        line.close()


@contextmanager
def working(label: str, every_s: float = 0.5) -> Iterator[None]:
    """Show ``label… N s`` while the block runs (a ticker thread: the block itself has no loop to hook)."""
    if not enabled():
        yield
        return
    line, start, stop = _Line(), time.monotonic(), threading.Event()
    line.show(f"{label}…", force=True)

    def tick() -> None:
        while not stop.wait(every_s):
            line.show(f"{label}… {time.monotonic() - start:.0f} s", force=True)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        line.close()
