"""Predictions with stakes: the student writes a number before a cell measures it, and the line after
the measurement says how far off the guess was and why.

A prediction is not right or wrong (no strict-mode failure, no solution): what teaches is the gap
between the guess and this run's number, and the one sentence that explains it. In a lesson::

    MY_PREDICTION = ...   # seconds for 20,000 epochs on the GPU: write your guess, then run the next cells
    ...                   # the measuring cell
    predict(MY_PREDICTION, measured=gpu_seconds, unit="s", why="the GPU waits for the CPU's launches")
"""
from __future__ import annotations

import math
import numbers
from typing import Any

from ..i18n import t
from .core import is_unattempted


def gap(guess: float, measured: float) -> float:
    """How many times off a guess is, >= 1 either way (a guess of 2 for 8 and of 32 for 8 are both 4x)."""
    if guess <= 0 or measured <= 0:
        return math.inf
    return max(guess / measured, measured / guess)


def verdict(guess: Any, measured: float, *, unit: str = "", why: str = "", close: float = 1.5,
            found: str = "measured") -> str:
    """The line printed under the measurement: the guess, this run's number, the factor, and ``why``.
    ``found`` is the verb for how the run got its number ("estimated" for a computed estimate)."""
    shown = f"{measured:.3g}{(' ' + unit) if unit else ''}"
    found = {"measured": t("measured"), "estimated": t("estimated")}.get(found, found)  # in the lesson's language
    if is_unattempted(guess):
        return t("⬜ no prediction written: this run {found} {shown}. Next time write your guess first: "
                 "a guess you commit to is what shows you which part of your picture was wrong.", found=found, shown=shown)
    if isinstance(guess, bool) or not isinstance(guess, numbers.Real) or not math.isfinite(float(guess)):
        return t("⬜ the prediction must be a number (it is {kind}); this run {found} {shown}.",
                 kind=type(guess).__name__, found=found, shown=shown)
    factor = gap(float(guess), measured)
    where = t("too low") if guess < measured else t("too high")
    if factor <= close:
        head = t("🎯 you predicted {guess:.3g}, this run {found} {shown}: within {close:g}×",
                 guess=float(guess), found=found, shown=shown, close=close)
    elif math.isinf(factor):
        head = t("❌ you predicted {guess:.3g}, this run {found} {shown}: a prediction must be positive",
                 guess=float(guess), found=found, shown=shown)
    else:
        head = t("↔ you predicted {guess:.3g}, this run {found} {shown}: {factor:.1f}× {where}",
                 guess=float(guess), found=found, shown=shown, factor=factor, where=where)
    return head + (t(". Why: {why}", why=why) if why else t("."))


def predict(guess: Any, *, measured: float, unit: str = "", why: str = "", close: float = 1.5,
            found: str = "measured") -> None:
    """Print :func:`verdict` under the cell. Never raises: Run All goes on with or without a guess."""
    print(verdict(guess, float(measured), unit=unit, why=why, close=close, found=found))
