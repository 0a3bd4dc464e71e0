"""Lesson 03's exercises: a callable that keeps state, a hook that records shapes and cleans up
after itself, and what pruning's forward pre-hook means for ``model.forward(x)`` (the core); a global
hook that counts module calls (the deeper notebook)."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..i18n import t
from ._types import not_a_number
from .core import close, exercise


class _EMA:
    def __init__(self, beta: float) -> None:
        self.beta, self.mean = beta, None

    def __call__(self, value: float) -> float:
        self.mean = value if self.mean is None else self.beta * self.mean + (1 - self.beta) * value
        return self.mean


class _SwappedEMA(_EMA):
    def __call__(self, value: float) -> float:
        self.mean = value if self.mean is None else (1 - self.beta) * self.mean + self.beta * value
        return self.mean


_SERIES = [2.0, 1.0, 1.5, 0.5, 0.75, 0.25, 0.4]


@exercise("03.ema", kind="code", right=lambda: _EMA, wrong=lambda: _SwappedEMA)
def _ema(answer: Any, **context: Any) -> str | None:
    if not isinstance(answer, type):
        return t("EMA should be a class (class EMA: with __init__ and __call__), not a {kind}: "
                 "an instance made by EMA(beta) keeps the average between calls (section 1).",
                 kind=type(answer).__name__)
    if "__call__" not in vars(answer):
        return t("your EMA defines no __call__ yet, so ema(value) cannot work: write __init__(self, beta) to set "
                 "up the state and __call__(self, value) to update and return it (RunningMean in section 1).")
    for beta in (0.5, 0.9, 0.0):
        mine, theirs = _EMA(beta), answer(beta)
        for i, v in enumerate(_SERIES):
            want, got = mine(v), theirs(v)
            hint = not_a_number(got, t("with beta={beta}, what ema({v}) returns", beta=beta, v=v))
            if hint:
                return hint
            if not close(got, want, rel=1e-9, abs_=1e-12):
                return t("with beta={beta}, after {n} values your average is {got!r}, not what "
                         "mean = beta * mean + (1 - beta) * value gives. Does the first call return the value "
                         "itself, is the state kept on self between calls, and does beta weigh the old mean?",
                         beta=beta, n=i + 1, got=got)
    return None


def _record_shapes(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
    shapes: list[tuple[str, tuple[int, ...]]] = []
    handles = [m.register_forward_hook(lambda mod, args, out, name=name: shapes.append((name, tuple(out.shape))))
               for name, m in model.named_modules() if name]
    try:
        model(x)
    finally:
        for h in handles:
            h.remove()
    return shapes


def _record_shapes_leaky(model: nn.Module, x: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
    shapes: list[tuple[str, tuple[int, ...]]] = []
    for name, m in model.named_modules():
        if name:
            m.register_forward_hook(lambda mod, args, out, name=name: shapes.append((name, tuple(out.shape))))
    model(x)
    return shapes


def _hidden_model() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(6, 5), nn.Tanh())
    model = nn.Sequential(nn.Linear(3, 6), nn.ReLU(), block, nn.Linear(5, 2))
    return model, torch.randn(7, 3)


@exercise("03.record_shapes", kind="code", right=lambda: _record_shapes, wrong=lambda: _record_shapes_leaky)
def _shapes(answer: Any, **context: Any) -> str | None:
    model, x = _hidden_model()
    got = answer(model, x)
    want = _record_shapes(*_hidden_model())
    if list(got or []) != want:
        return t("on a model you have not seen, you returned {got!r}. Expected one (name, output shape) pair "
                 "per submodule with a name (named_modules() gives the model itself the name ''), in the order "
                 "the hooks fire, with the shape as a tuple of ints (section 3).", got=got)
    left = sum(len(m._forward_hooks) for m in model.modules())
    if left:
        return t("your function returned the right shapes but left {left} hooks on the model: they would fire "
                 "on every later call. Keep the handles and remove them (section 4), even if the call raises.",
                 left=left)
    return None


@exercise("03.pruned_call", right=lambda: "fc1(X)", wrong=lambda: "fc1.forward(X)")
def _pruned(answer: Any, **context: Any) -> str | None:
    if not isinstance(answer, str):
        return t('your answer is {answer!r}; answer with the call as a string: "fc1(X)" or "fc1.forward(X)"',
                 answer=answer)
    text = answer.replace(" ", "").removeprefix("pruned.").removeprefix("model.")
    if text == "fc1(X)":
        return None
    if text == "fc1.forward(X)":
        return t("forward multiplies X by the attribute `weight` as it is. When was that attribute last computed "
                 "from weight_orig and weight_mask, and by what (the end of section 2)?")
    return t('answer with the call as a string: "fc1(X)" or "fc1.forward(X)"')


def _count_module_calls(fn: Any) -> int:
    calls: list[str] = []
    with nn.modules.module.register_module_forward_hook(lambda mod, args, out: calls.append(type(mod).__name__)):
        fn()
    return len(calls)


def _count_module_calls_leaky(fn: Any) -> int:
    calls: list[str] = []
    nn.modules.module.register_module_forward_hook(lambda mod, args, out: calls.append(type(mod).__name__))
    fn()
    return len(calls)


@exercise("03.count_module_calls", kind="code", right=lambda: _count_module_calls,
          wrong=lambda: _count_module_calls_leaky)
def _count(answer: Any, **context: Any) -> str | None:
    hooks = nn.modules.module._global_forward_hooks  # the registry behind register_module_forward_hook
    before = set(hooks)
    try:
        model, x = _hidden_model()  # Sequential(Linear, ReLU, Sequential(Linear, Tanh), Linear)
        for what, fn, want in [("model(x)", lambda: model(x), 7), ("model.forward(x)", lambda: model.forward(x), 6),
                               (t("two calls of model[0]"), lambda: (model[0](x), model[0](x)), 2)]:
            got = answer(fn)
            if isinstance(got, (list, tuple, set, dict)):
                return t("for {what} your function returns a {kind}; return the number of calls "
                         "(an int, e.g. len() of what your hook collected).", what=what, kind=type(got).__name__)
            if got != want:
                return t("for {what} on a model you have not seen you counted {got!r} module calls. A global forward "
                         "hook fires once for every module called through __call__, the outer model included.",
                         what=what, got=got)
        left = set(hooks) - before
    finally:
        for key in set(hooks) - before:  # do not let a leaked hook count calls in the rest of the lesson
            del hooks[key]
    if left:
        return t("the counts are right, but {n} global hooks were still registered afterwards: they would "
                 "count (and slow) every module call in this kernel from now on. Remove them with their handles.",
                 n=len(left))
    return None
