"""Sync-correct timing.

Three rules make a GPU timing honest: warm up first (the first call pays for CUDA context
creation, cuBLAS handles, caching-allocator growth), synchronise before reading the clock
(kernel launches are asynchronous), and repeat and report the median (one run is noise).
``benchmark`` follows all three on top of ``torch.utils.benchmark``.
"""
from __future__ import annotations

import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch

from .device import synchronize


@dataclass
class Timing:
    """Seconds per call of a benchmarked function."""

    label: str
    median: float
    iqr: float
    times: list[float] = field(repr=False)
    calls: int  # calls timed in all (blocks x calls per block)

    @property
    def spread(self) -> float:
        """Inter-quartile range relative to the median (0.05 = 5 %)."""
        return self.iqr / self.median if self.median > 0 else float("nan")

    def __str__(self) -> str:
        return f"{self.label}: {format_seconds(self.median)} median (IQR {format_seconds(self.iqr)}, {self.calls} calls)"


def format_seconds(s: float) -> str:
    """Human units: 12.3 us, 4.56 ms, 1.23 s."""
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def benchmark(
    fn: Callable[[], object],
    device: torch.device | str = "cpu",
    *,
    label: str = "",
    warmup: int = 3,
    min_run_time: float = 0.2,
    threads: int | None = None,
) -> Timing:
    """Time ``fn()`` on ``device``: ``warmup`` untimed calls, then blocks of calls for at least
    ``min_run_time`` seconds, with the device synchronised before every clock read.

    ``threads`` defaults to the current ``torch.get_num_threads()`` (``torch.utils.benchmark``
    would otherwise silently time with one thread). Used by: notebooks 01, 02, 04, 06, 07, 08.
    """
    dev = torch.device(device)
    for _ in range(warmup):
        fn()
    synchronize(dev)

    def clock() -> float:
        synchronize(dev)
        return time.perf_counter()

    import torch.utils.benchmark as tbench  # here: importing it costs every process that imports course_utils 0.17 s

    timer = tbench.Timer(
        stmt="fn()",
        globals={"fn": fn},
        timer=clock,
        label=label,
        num_threads=threads or torch.get_num_threads(),
    )
    m = timer.blocked_autorange(min_run_time=min_run_time)
    return Timing(label=label, median=m.median, iqr=m.iqr, times=list(m.times), calls=m.number_per_run * len(m.times))


def time_once(fn: Callable[[], object], device: torch.device | str = "cpu") -> float:
    """Wall-clock seconds of one call of ``fn``, synchronised before and after.

    For long runs (a whole training loop) that cannot be repeated many times.
    Used by: notebooks 02, 10.
    """
    dev = torch.device(device)
    synchronize(dev)
    t0 = time.perf_counter()
    fn()
    synchronize(dev)
    return time.perf_counter() - t0


def median_of(fn: Callable[[], object], device: torch.device | str = "cpu", repeats: int = 3) -> Timing:
    """Median of ``repeats`` synchronised single calls, for runs too long for :func:`benchmark`.

    Used by: notebook 02.
    """
    times = [time_once(fn, device) for _ in range(repeats)]
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return Timing(label="", median=statistics.median(times), iqr=q[2] - q[0], times=times, calls=repeats)


def relative_spread(samples: list[float]) -> float:
    """Inter-quartile range of ``samples`` over their median (0.05 = 5 %); 0 for fewer than 2 samples.
    The yardstick for "is this difference bigger than the noise of this run?"."""
    if len(samples) < 2:
        return 0.0
    q = statistics.quantiles(samples, n=4)
    med = statistics.median(samples)
    return (q[2] - q[0]) / med if med > 0 else float("nan")


def quartiles(t: Timing) -> tuple[float, float]:
    """The first and third quartile of ``t``'s timed samples (both the median for one sample)."""
    if len(t.times) < 2:
        return t.median, t.median
    q = statistics.quantiles(t.times, n=4)
    return q[0], q[2]


def faster_verdict(a: Timing, b: Timing, a_name: str, b_name: str, scale: float = 1.0) -> str:
    """Which of two timings is faster, or ``"inconclusive on this run (spread …)"`` when their
    inter-quartile ranges overlap: a ratio of medians means nothing when the samples of the two sides
    interleave. ``scale`` converts both to per-unit times (e.g. ``1 / steps``) for the printed spread.
    Fewer than 3 samples per side give no spread to judge, and the verdict says so."""
    (a1, a3), (b1, b3) = quartiles(a), quartiles(b)
    spread = (f"spread {a_name} {a1 * scale * 1e3:.3f}-{a3 * scale * 1e3:.3f} ms, "
              f"{b_name} {b1 * scale * 1e3:.3f}-{b3 * scale * 1e3:.3f} ms")
    if min(len(a.times), len(b.times)) >= 3 and a1 <= b3 and b1 <= a3:
        return f"inconclusive on this run ({spread})"
    fast, slow = (a_name, b_name) if a.median < b.median else (b_name, a_name)
    ratio = max(a.median, b.median) / min(a.median, b.median)
    few = "" if min(len(a.times), len(b.times)) >= 3 else "; fewer than 3 repeats: no spread to judge"
    return f"{fast} is {ratio:.1f}x faster than {slow} ({spread}{few})"


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run a block with ``torch.set_num_threads(n)``, then restore the previous thread count.

    The course's one place that changes the CPU thread count for a block: a thread count left
    changed by one measurement silently slows (or speeds) every later one in the kernel.
    Used by: notebooks 01, 04.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"thread count must be an integer >= 1, got {n!r}")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
