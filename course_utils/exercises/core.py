"""Exercises that check themselves: ``check(key, answer)`` judges a student's answer under the cell.

Why a registry and not asserts in the notebook: an assert stops Run All at the first unsolved
exercise and says nothing useful; a check prints *correct*, *wrong + a hint that teaches*, or
*not attempted*, and never raises in JupyterLab. With ``COURSE_STRICT_CHECKS=1`` (the tests, CI)
anything but *correct* raises :class:`ExerciseNotPassed`, so an unsolved lesson fails and a
solutions notebook must pass.

An exercise is registered with :func:`exercise` in ``course_utils/exercises/lessonNN.py``::

    @exercise("05.bytes_per_parameter", kind="code",
              right=lambda: lambda opt, prec: ...,   # a correct answer, for the tests
              wrong=lambda: lambda opt, prec: 4.0)   # a typical mistake, for the tests
    def _(answer, **context) -> str | None:
        ...   # return None when right, else the hint

``context`` carries this run's own measurements (``check("02.speedup", x, measured=s)``), so an
answer that depends on the machine is judged against the machine, not a constant. ``example``
gives the tests a context to judge ``right``/``wrong`` with.

A template that starts from working-but-wrong code (a loop to fix, not a stub) registers that code
as ``starter=``: an answer whose code is still the starter's (comments, docstring and name aside)
is *not attempted*, so an untouched template never prints *wrong*. Judges that expect a number or a
list of numbers call :func:`number_hint` first, so a tensor, ``None`` or a string gets a hint that
says what was handed in instead of a raw warning or a crash.
"""
from __future__ import annotations

import ast
import dis
import inspect
import numbers
import os
import textwrap
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from ..i18n import t

STRICT_ENV = "COURSE_STRICT_CHECKS"

Judge = Callable[..., "str | None"]


class ExerciseNotPassed(AssertionError):
    """Raised by :func:`check` in strict mode when an answer is wrong or missing."""


class Verdict(str, Enum):
    CORRECT = "correct"
    WRONG = "wrong"
    NOT_ATTEMPTED = "not attempted"


@dataclass(frozen=True)
class Exercise:
    key: str
    judge: Judge
    right: Callable[[], Any]
    wrong: Callable[[], Any]
    kind: str = "answer"  # "answer" (a value) or "code" (a function or class the student writes)
    example: dict[str, Any] = field(default_factory=dict)
    starter: Callable[[], Any] | None = None  # the template's own code, for "code" exercises that start from one


@dataclass(frozen=True)
class Outcome:
    key: str
    verdict: Verdict
    message: str

    def __str__(self) -> str:
        mark = {Verdict.CORRECT: "✅", Verdict.WRONG: "❌", Verdict.NOT_ATTEMPTED: "⬜"}[self.verdict]
        said = {Verdict.CORRECT: t("correct"), Verdict.WRONG: t("wrong"), Verdict.NOT_ATTEMPTED: t("not attempted")}
        return f"{mark} {self.key}: {said[self.verdict]}" + (f" — {self.message}" if self.message else "")


REGISTRY: dict[str, Exercise] = {}
KINDS = ("answer", "code")


def exercise(key: str, *, right: Callable[[], Any], wrong: Callable[[], Any], kind: str = "answer",
             example: dict[str, Any] | None = None, starter: Callable[[], Any] | None = None
             ) -> Callable[[Judge], Judge]:
    """Register the decorated judge under ``key`` (``"NN.name"``). A key is registered once.

    ``starter`` returns the function the lesson's template starts from, when that is real code
    rather than ``...``: an answer with the same code is judged *not attempted*."""
    if key in REGISTRY:
        raise ValueError(f"exercise {key!r} is registered twice")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    def register(judge: Judge) -> Judge:
        REGISTRY[key] = Exercise(key, judge, right, wrong, kind, dict(example or {}), starter)
        return judge

    return register


def is_unattempted(answer: Any) -> bool:
    """``...`` itself, or a function/class whose body is still only ``...`` (the template's stub)."""
    if answer is Ellipsis:
        return True
    if inspect.isclass(answer):
        own = {k for k in vars(answer) if k not in _CLASS_BOILERPLATE}
        return not own or all(inspect.isfunction(v) and is_unattempted(v) for k, v in vars(answer).items() if k in own)
    if inspect.isfunction(answer):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(answer)))
            node = tree.body[0]
        except (OSError, TypeError, SyntaxError, IndexError):
            return _does_nothing(answer.__code__)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False  # a lambda (its source line is an assignment): it computes something
        body = [n for n in node.body if not _is_docstring(n)]
        return all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and n.value.value is Ellipsis
                   for n in body)
    return False


_CLASS_BOILERPLATE = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__firstlineno__",
                      "__static_attributes__", "__annotations__"}


def _does_nothing(code: Any) -> bool:
    """Source unavailable: the bytecode only returns None (a body of ``...`` and a docstring)."""
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code) if i.opname not in {"RESUME", "NOP", "CACHE"}]
    return ops in ([("LOAD_CONST", None), ("RETURN_VALUE", None)], [("RETURN_CONST", None)])


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _body_dump(fn: Any) -> str | None:
    """The function's body as an AST dump without its docstring (comments are not in the AST),
    or None when the source is unavailable: what "the same code" means for :func:`is_starter`."""
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    body = [n for n in node.body if not _is_docstring(n)]
    return "\n".join(ast.dump(n) for n in body)


def is_starter(answer: Any, starter: Any) -> bool:
    """``answer`` is a function whose body is still the starter's (only comments, the docstring or
    the name changed): the student has not edited the template yet."""
    if not (inspect.isfunction(answer) and inspect.isfunction(starter)):
        return False
    mine = _body_dump(answer)
    return mine is not None and mine == _body_dump(starter)


def number_hint(value: Any, what: str = "a number") -> str | None:
    """None when ``value`` is a plain real number (int or float, not bool); else a hint naming what
    it is instead. A tensor gets the lesson's point: ``.item()`` (or ``float()``) gives the number,
    and a tensor that requires grad keeps its whole autograd graph alive while it is held."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value == value:
        return None
    if isinstance(value, float):
        return t("you gave NaN where {what} is expected: one of the numbers it was computed from is missing.", what=what)
    if value is None:
        return t("you gave None where {what} is expected: did the function or cell forget to `return` it?", what=what)
    if hasattr(value, "detach") and hasattr(value, "requires_grad"):   # a torch.Tensor, without importing torch
        graph = (t(" It still requires grad, so holding it keeps the autograd graph of its step alive "
                   "(memory that grows with every tensor kept).") if value.requires_grad else "")
        return t("you gave a tensor (shape {shape}) where {what} is expected: `.item()` turns a "
                 "one-element tensor into a Python number.", shape=tuple(value.shape), what=what) + graph
    if isinstance(value, str):
        return t("you gave the string {value!r} where {what} is expected: write the number itself, without quotes.",
                 value=value, what=what)
    return t("you gave {kind} {value!r} where {what} is expected.", kind=type(value).__name__, value=value, what=what)


def evaluate(key: str, answer: Any, **context: Any) -> Outcome:
    """Judge ``answer``; never raises for a student's mistake (their code raising is a *wrong*)."""
    if key not in REGISTRY:
        raise KeyError(f"no exercise {key!r}; known: {sorted(REGISTRY)}")
    if is_unattempted(answer):
        return Outcome(key, Verdict.NOT_ATTEMPTED, t("replace the `...` with your answer and run the cell again"))
    starter = REGISTRY[key].starter
    if starter is not None and is_starter(answer, starter()):
        return Outcome(key, Verdict.NOT_ATTEMPTED, t("this is still the starter code: change the lines marked "
                                                     "`# TODO` and run the cell again"))
    try:
        hint = REGISTRY[key].judge(answer, **context)
    except Exception as err:  # the student's function raised: that is feedback, not a crash
        return Outcome(key, Verdict.WRONG, t("your answer raised {name}: {err}", name=type(err).__name__, err=err))
    if hint is None:
        return Outcome(key, Verdict.CORRECT, "")
    return Outcome(key, Verdict.WRONG, hint)


def strict() -> bool:
    return os.environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes"}


def check(key: str, answer: Any, **context: Any) -> Outcome | None:
    """Print the verdict under the cell; in strict mode raise unless it is correct.

    Returns nothing to the notebook (no stray ``Out[]``); tests use :func:`evaluate`.
    """
    outcome = evaluate(key, answer, **context)
    print(outcome)
    if strict() and outcome.verdict is not Verdict.CORRECT:
        raise ExerciseNotPassed(f"{STRICT_ENV}=1 and {outcome}")
    return None


def close(value: Any, target: float, rel: float, abs_: float = 0.0) -> bool:
    """``value`` is a number within ``rel`` (fraction) or ``abs_`` of ``target``: for judges.

    A tensor is compared by its value, detached first: ``float()`` on a tensor that requires grad
    would print a UserWarning under the student's cell. Judges that must reject tensors (a kept
    loss tensor is the mistake) say so with :func:`number_hint` before comparing."""
    if hasattr(value, "detach") and hasattr(value, "requires_grad"):
        value = value.detach()
    try:
        v = float(value)
    except (TypeError, ValueError):
        return False
    return abs(v - target) <= max(rel * abs(target), abs_)
