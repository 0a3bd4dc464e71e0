"""Lesson 02's exercises: a training loop that reads the loss every N epochs (judged by running it
and counting the reads), a whole run predicted from this run's measured parts, where the work
outgrows the overhead in this run's sweep, and which part of a step momentum makes longer (judged
by counting the operators of each part)."""
from __future__ import annotations

import collections
from typing import Any, Callable

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from .core import close, exercise, number_hint

PARTS = ("forward", "loss", "zero_grad", "backward", "opt.step")


class _CountOps(TorchDispatchMode):
    """Counts every aten operator while active (``_local_scalar_dense`` is what ``.item()`` runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


# --- 02.read_every -----------------------------------------------------------------------------

def _read_every(model, X, y, opt, loss_fn, epochs: int, every: int) -> list[float]:
    losses = []
    for epoch in range(epochs):
        loss = loss_fn(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if epoch % every == 0:
            losses.append(loss.item())           # a sync only when the loss is read
    return losses


def _item_every_epoch(model, X, y, opt, loss_fn, epochs: int, every: int) -> list[float]:
    """The template's starter loop (lesson 02, exercise 1): right losses, but a read every epoch."""
    losses = []
    for epoch in range(epochs):
        loss = loss_fn(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        value = loss.item()                      # still a sync every epoch
        if epoch % every == 0:
            losses.append(value)
    return losses


def _kept_tensors(model, X, y, opt, loss_fn, epochs: int, every: int) -> list:
    losses = []
    for epoch in range(epochs):
        loss = loss_fn(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if epoch % every == 0:
            losses.append(loss)                  # no read at all, but each kept tensor holds its graph
    return losses


def _train_hidden(train: Callable, epochs: int = 60, every: int = 20) -> tuple[Any, list[torch.Tensor], int]:
    """Run ``train`` on a small hidden problem; return its losses, final weights and ``.item()`` count."""
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    gen = torch.Generator().manual_seed(20)
    X, y = torch.randn(64, 4, generator=gen), torch.randint(0, 3, (64,), generator=gen)
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    with _CountOps() as counter:
        losses = train(model, X, y, opt, nn.CrossEntropyLoss(), epochs, every)
    return losses, [p.detach().clone() for p in model.parameters()], counter.ops["_local_scalar_dense"]


@exercise("02.read_every", kind="code", right=lambda: _read_every, wrong=lambda: _kept_tensors,
          starter=lambda: _item_every_epoch)
def _read_every_judge(answer: Any, **context: Any) -> str | None:
    want, want_weights, want_reads = _train_hidden(_read_every)
    got, weights, reads = _train_hidden(answer)
    if not isinstance(got, (list, tuple)):
        return (f"return the losses as a list of Python floats; your function returned {type(got).__name__}"
                + (" (a `return losses` missing?)" if got is None else "") + ".")
    kept = next((g for g in got if number_hint(g) is not None), None)
    if kept is not None and hasattr(kept, "requires_grad"):
        return ("your list holds loss *tensors*, not numbers. A loss tensor that is still part of the autograd graph "
                "keeps that epoch's whole graph (its activations too) alive for as long as you hold it, and on a GPU "
                "its value has not even been copied back. Read the number with .item() in the epochs you keep, "
                "and only there.")
    if kept is not None:
        return "return the losses as Python floats: " + number_hint(kept, "each loss")
    if reads > want_reads:
        return (f"your loop ran .item() (or float()) {reads} times for {len(want)} losses read: every call waits "
                "for the device on a GPU. Call it only in the epochs whose loss you keep (section 3).")
    if not all(torch.allclose(a, b, atol=1e-6) for a, b in zip(weights, want_weights)):
        return ("the model did not end where 60 plain training steps end: every epoch must still run forward, "
                "zero_grad, backward and step; only the *reading* happens every N epochs.")
    if not isinstance(got, (list, tuple)) or len(got) != len(want):
        return f"return the losses of epochs 0, N, 2N, ... as a list of floats ({len(want)} of them in the hidden run)."
    if not all(close(g, w, rel=1e-5, abs_=1e-6) for g, w in zip(got, want)):
        return "the returned losses are not those of epochs 0, N, 2N, ...: read each one in the epoch it belongs to."
    return None


# --- 02.predict_run ----------------------------------------------------------------------------

_PARTS_EXAMPLE = {"forward": 14.0, "loss": 6.0, "zero_grad": 3.0, "backward": 25.0, "opt.step": 12.0,
                  "GPU not hidden": 0.0, "item()": 0.2}


@exercise("02.predict_run", right=lambda: sum(_PARTS_EXAMPLE.values()) * 20_000 / 1e6,
          wrong=lambda: sum(_PARTS_EXAMPLE.values()) * 20_000, example={"parts_us": _PARTS_EXAMPLE})
def _predict_run(answer: Any, *, parts_us: dict[str, float], epochs: int = 20_000, **context: Any) -> str | None:
    wrong_type = number_hint(answer, "a number of seconds")
    if wrong_type:
        return wrong_type
    per_epoch = sum(parts_us.values())
    truth = per_epoch * epochs / 1e6
    if close(answer, truth, rel=0.03):
        return None
    if close(answer, truth * 1e6, rel=0.03):
        return "the parts are in microseconds and the answer is asked in seconds."
    if close(answer, per_epoch / 1e6, rel=0.03) or close(answer, per_epoch, rel=0.03):
        return f"that is one epoch; the run has {epochs:,} of them."
    return ("an epoch is, by the model of section 7, the host time of all five parts + the GPU time the host does not "
            "hide + one read: add every measured part, then scale to the whole run.")


# --- 02.overhead_width -------------------------------------------------------------------------

def overhead_width(sizes: list[int], cpu_ms: list[float], dev_ms: list[float] | None = None) -> int | None:
    """With an accelerator's times: the smallest width from which it is faster at every larger width.
    Without: the smallest width whose CPU step takes at least twice the step at the smallest width
    (from there on the work, not the fixed overhead, sets the time). None: not in this sweep."""
    for i, s in enumerate(sizes):
        if dev_ms is not None and all(d < c for c, d in zip(cpu_ms[i:], dev_ms[i:])):
            return s
        if dev_ms is None and cpu_ms[i] >= 2 * cpu_ms[0]:
            return s
    return None


_SWEEP_EXAMPLE = {"sizes": [10, 100, 1_000, 4_000], "cpu_ms": [0.06, 0.07, 0.2, 0.9], "dev_ms": None}


@exercise("02.overhead_width", right=lambda: 1_000, wrong=lambda: 4_000, example=_SWEEP_EXAMPLE)
def _overhead_width(answer: Any, *, sizes: list[int], cpu_ms: list[float], dev_ms: list[float] | None = None,
                    **context: Any) -> str | None:
    truth = overhead_width(sizes, cpu_ms, dev_ms)
    if answer == truth:
        return None
    if answer is not None and answer not in sizes:
        return f"answer with one of the sweep's widths {sizes}, or None if no width qualifies."
    if dev_ms is not None:
        return ("'starts to win' means from this width on, at every larger width of the sweep too: "
                "walk the widths from the smallest and stop at the first from which the device is faster at all of them.")
    return ("compare each width's CPU time per step with the time at the smallest width: the first that is at least "
            "twice as long is where the work starts to outweigh the fixed overhead of a step.")


# --- 02.momentum_part --------------------------------------------------------------------------

def ops_per_part(momentum: float) -> dict[str, int]:
    """Aten operators of each part of the second training step of a tiny MLP under SGD(momentum)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 10), nn.ReLU(), nn.Linear(10, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=momentum)
    X, y, loss_fn = torch.randn(8, 4), torch.randint(0, 3, (8,)), nn.CrossEntropyLoss()
    counts: dict[str, int] = {}

    def counted(part: str, run: Callable[[], Any]) -> Any:
        with _CountOps() as c:
            result = run()
        counts[part] = sum(c.ops.values())
        return result

    for _ in range(2):  # the second step is the steady state (the first creates the buffers)
        out = counted("forward", lambda: model(X))
        loss = counted("loss", lambda: loss_fn(out, y))
        counted("zero_grad", opt.zero_grad)
        counted("backward", loss.backward)
        counted("opt.step", opt.step)
    return counts


def _momentum_truth() -> str:
    plain, heavy = ops_per_part(0.0), ops_per_part(0.9)
    return max(PARTS, key=lambda p: heavy[p] - plain[p])


@exercise("02.momentum_part", right=_momentum_truth, wrong=lambda: "backward")
def _momentum_part(answer: Any, **context: Any) -> str | None:
    if answer not in PARTS:
        return f"answer with one of the parts {list(PARTS)}"
    if answer == _momentum_truth():
        return None
    if answer in ("forward", "loss", "backward"):
        return ("momentum changes how a gradient is *used* once it exists, not how the loss or the gradient is "
                "computed: which part of the step updates the weights from the gradients?")
    return "zero_grad only clears gradients; the momentum buffers are read and written somewhere else."
