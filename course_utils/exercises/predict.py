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
    if is_unattempted(guess):
        return (f"⬜ no prediction written: this run {found} {shown}. Next time write your guess first: "
                f"a guess you commit to is what shows you which part of your picture was wrong.")
    if isinstance(guess, bool) or not isinstance(guess, numbers.Real) or not math.isfinite(float(guess)):
        return f"⬜ the prediction must be a number (it is {type(guess).__name__}); this run {found} {shown}."
    factor = gap(float(guess), measured)
    where = "too low" if guess < measured else "too high"
    if factor <= close:
        head = f"🎯 you predicted {float(guess):.3g}, this run {found} {shown}: within {close:g}×"
    elif math.isinf(factor):
        head = f"❌ you predicted {float(guess):.3g}, this run {found} {shown}: a prediction must be positive"
    else:
        head = f"↔ you predicted {float(guess):.3g}, this run {found} {shown}: {factor:.1f}× {where}"
    return head + (f". Why: {why}" if why else ".")


def predict(guess: Any, *, measured: float, unit: str = "", why: str = "", close: float = 1.5,
            found: str = "measured") -> None:
    """Print :func:`verdict` under the cell. Never raises: Run All goes on with or without a guess."""
    print(verdict(guess, float(measured), unit=unit, why=why, close=close, found=found))
