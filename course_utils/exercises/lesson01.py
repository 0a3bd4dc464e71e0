"""Lesson 01's exercises: a timer that synchronises (judged on a pretend GPU with a fake clock), moving
a whole batch that lists and dicts cannot move themselves, when ``.to`` returns the same object, and
a prediction computed from this run's own sweep."""
from __future__ import annotations

import statistics
from typing import Any, Callable

import torch

from ..i18n import t
from .core import exercise, number_hint


class _PretendGpu:
    """A device whose work finishes only at a sync: ``launch()`` queues a job and returns at once.

    The clock is virtual, so the judge is exact and immune to load. The first calls are slow (as a
    real first call pays for context creation and autotuning), later ones vary around one value.
    """

    def __init__(self, durations: list[float], launch_cost: float = 1e-6) -> None:
        self.durations, self.launch_cost = list(durations), launch_cost
        self.now, self.pending, self.calls, self.syncs = 0.0, 0.0, 0, 0

    def launch(self) -> None:
        self.now += self.launch_cost
        self.pending += self.durations[self.calls % len(self.durations)]
        self.calls += 1

    def sync(self) -> None:
        self.now += self.pending
        self.pending = 0.0
        self.syncs += 1

    def clock(self) -> float:
        return self.now


# two slow first calls, then steady calls with one load spike: mean != median, warm-up matters
_DURATIONS = [0.5, 0.2, 0.010, 0.011, 0.009, 0.050, 0.010, 0.012, 0.010, 0.011, 0.010, 0.013]


def _timer(fn: Callable[[], object], sync: Callable[[], None], clock: Callable[[], float],
           warmup: int = 3, repeats: int = 7) -> float:
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        sync()
        times.append(clock() - t0)
    return statistics.median(times)


def _timer_no_sync(fn, sync, clock, warmup=3, repeats=7):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def _expected(warmup: int, repeats: int) -> float:
    n = len(_DURATIONS)
    return statistics.median(_DURATIONS[(warmup + i) % n] + 1e-6 for i in range(repeats))


@exercise("01.sync_timer", kind="code", right=lambda: _timer, wrong=lambda: _timer_no_sync)
def _sync_timer(answer: Any, **context: Any) -> str | None:
    for warmup, repeats in ((3, 7), (2, 9), (4, 5)):
        gpu = _PretendGpu(_DURATIONS)
        got = answer(gpu.launch, gpu.sync, gpu.clock, warmup=warmup, repeats=repeats)
        want = _expected(warmup, repeats)
        if gpu.calls != warmup + repeats:
            return t("with warmup={warmup}, repeats={repeats} your timer called fn {calls} times: call it "
                     "warmup times untimed, then once per timed repeat (section 6).",
                     warmup=warmup, repeats=repeats, calls=gpu.calls)
        if not isinstance(got, (int, float)) or got != got:
            return t("return the median time in seconds, a number; you returned {got!r}", got=got)
        if got < 1e-4:
            return t("your timer measured {got:.2e} s per call on a device whose calls take milliseconds: "
                     "it read the clock while the work was still queued. Where must the sync go (section 6)?", got=got)
        if abs(got - want) > 1e-9:
            times = [d + 1e-6 for d in _DURATIONS[warmup:warmup + repeats]]
            if abs(got - statistics.mean(times)) < 1e-9:
                return t("that is the mean: one load spike drags it up. Report the median of the repeats.")
            return t("with warmup={warmup}, repeats={repeats} you reported {got:.4f} s: the slow first calls or "
                     "the warm-up's queued work leaked into a timed repeat. Sync after the warm-up (before the "
                     "first clock read) and after each timed call, and take the median.",
                     warmup=warmup, repeats=repeats, got=got)
    return None


def _to_device(batch: Any, device: torch.device | str) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch


def _to_device_flat(batch: Any, device: torch.device | str) -> Any:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _hidden_batch() -> dict[str, Any]:
    return {"x": torch.randn(4, 3), "y": torch.tensor([0, 1, 1, 0]), "name": "batch-7",
            "extra": [torch.ones(2), (torch.zeros(1), 3)], "mask": {"m": torch.ones(4, dtype=torch.bool)}}


def _tensors(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v)]
    return []


def _same_shape(a: Any, b: Any) -> bool:
    """Same containers, keys, non-tensor values and tensor dtypes/shapes."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_shape(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same_shape, a, b))
    return a == b


@exercise("01.to_device", kind="code", right=lambda: _to_device, wrong=lambda: _to_device_flat)
def _to_device_judge(answer: Any, **context: Any) -> str | None:
    batch = _hidden_batch()
    moved = answer(batch, "meta")  # a device every machine has: shapes, no data
    if not _same_shape(batch, moved):
        return t("the result must keep the batch's structure: the same dict keys, lists stay lists and tuples "
                 "tuples, and values that are not tensors (a name, a count) unchanged. Lists and dicts have no "
                 ".to (section 5): go into them and rebuild them.")
    on = sorted({x.device.type for x in _tensors(moved)})
    if on != ["meta"]:
        return t("some tensors of the returned batch are on {on}, not all on the device you were given. "
                 "Tensors can sit in lists, tuples and dicts inside the batch, at any depth; and x.to(...) returns "
                 "the moved tensor, it leaves x where it was (section 2).", on=on)
    if any(x.device.type != "cpu" for x in _tensors(batch)):
        return t("the input batch changed device: build a new batch, do not modify the caller's.")
    return None


@exercise("01.to_same_object", right=lambda: (True, False, True), wrong=lambda: (False, False, False),
          example={})
def _to_same_object(answer: Any, **context: Any) -> str | None:
    if not isinstance(answer, tuple) or len(answer) != 3:
        return t("answer with a tuple of three booleans for "
                 "(a) x.to('cpu') is x  (b) x.to(torch.float64) is x  (c) model.to('cpu') is model")
    a, b, c = (bool(v) for v in answer)
    if not a:
        return t("(a): when nothing changes (same device, same dtype), what does Tensor.to return (section 2)?")
    if b:
        return t("(b): a new dtype needs new storage. Can that be the object you called .to on (section 2)?")
    if not c:
        return t("(c): what does Module.to return, and does it change the module in place (section 3)?")
    return None


def _mm_4096_seconds_answer(measured: dict[int, float]) -> float:
    """Seconds for one 4096 x 4096 product at the rate of the largest size timed: 2 n^3 FLOP / rate."""
    return 2 * 4096**3 / (measured[max(measured)] * 1e9)


_EXAMPLE_SWEEP = {64: 3.0, 256: 40.0, 1024: 31.0}


@exercise("01.mm_4096_seconds", right=lambda: _mm_4096_seconds_answer(_EXAMPLE_SWEEP),
          wrong=lambda: _mm_4096_seconds_answer(_EXAMPLE_SWEEP) * 1000, example={"measured": _EXAMPLE_SWEEP})
def _mm_4096_seconds(answer: Any, **context: Any) -> str | None:
    measured: dict[int, float] = context["measured"]
    wrong_type = number_hint(answer, t("a number of seconds"))
    if wrong_type:
        return wrong_type
    want = _mm_4096_seconds_answer(measured)
    if answer <= 0:
        return t("a time is positive: one product does 2 n^3 FLOP, and the rate (GFLOP/s) is FLOP per second.")
    ratio = answer / want
    if abs(ratio - 1) <= 0.05:
        return None
    for factor, hint in ((1000, t("that looks like milliseconds: the check wants seconds.")),
                         (1e-9, t("GFLOP/s means billions of FLOP per second: multiply the rate by 1e9.")),
                         (1e9, t("GFLOP/s means billions of FLOP per second: multiply the rate by 1e9.")),
                         (0.5, t("a product of two n x n matrices does about 2 n^3 FLOP: did you forget the 2?")),
                         (1 / 8, t("that is about the time of the largest size timed. Doubling n multiplies the "
                                   "FLOP by 8 (n^3), so it multiplies the time by 8 at the same rate.")),
                         (1 / 4, t("doubling n multiplies the FLOP by 8 (n^3), not by 2."))):
        if abs(ratio / factor - 1) <= 0.05:
            return hint
    largest = max(measured)
    return t("your answer is {ratio:.2g} times the expected one. Count the FLOP of one 4096 x 4096 product "
             "(2 n^3) and divide by the rate at the largest size timed, n={largest}, in FLOP per second.",
             ratio=ratio, largest=largest)
